/**
 * @file    c_gate.c
 *
 * The streamix box c_gate: a stateful filter. It passes on the values within [min, max] and,
 * with `dedup`, drops a value equal to the one it passed last. Passed messages are forwarded as
 * they are (ownership goes on to the consumer), dropped ones are destroyed. At the end it logs
 * how many values it passed and dropped.
 *
 * Signature: box c_gate( in value, out value )      (payload: one `long long`)
 *
 * Configuration (all optional):
 *   - min   (int): smallest value passed (default: no bound)
 *   - max   (int): largest value passed (default: no bound)
 *   - dedup (bool): drop repeats of the value passed last (default: false)
 */

#include <limits.h>
#include <stdlib.h>
#include <bson.h>
#include "smxrts.h"
#include "c_gate.h"

/** The state of one c_gate net. */
typedef struct c_gate_state_s
{
    long long min;
    long long max;
    bool dedup;
    bool has_last;       /**< a value was passed already */
    long long last;      /**< the value passed last */
    unsigned long passed;
    unsigned long dropped;
} c_gate_state_t;

/******************************************************************************/
int c_gate( void* h, void* state )
{
    c_gate_state_t* s = state;
    smx_msg_t* msg = SMX_CHANNEL_READ( h, c_gate, value );

    if( msg == NULL )
    {
        /* NO_TARGET: the producer has ended and everything was read */
        if( SMX_GET_READ_ERROR( h, c_gate, value ) != SMX_CHANNEL_ERR_NO_TARGET )
            SMX_LOG( h, warn, "no input: %s",
                    smx_channel_strerror( SMX_GET_READ_ERROR( h, c_gate, value ) ) );
        return SMX_NET_RETURN;
    }
    if( msg->size != ( int )sizeof( long long ) )
    {
        SMX_LOG( h, error, "unexpected payload of %d bytes", msg->size );
        SMX_MSG_DESTROY( h, msg );
        return SMX_NET_END;
    }

    long long v = *( long long* )SMX_MSG_UNPACK( msg );
    if( v < s->min || v > s->max || ( s->dedup && s->has_last && v == s->last ) )
    {
        s->dropped++;
        SMX_LOG( h, debug, "drop %lld", v );
        SMX_MSG_DESTROY( h, msg );
        return SMX_NET_RETURN;
    }

    s->has_last = true;
    s->last = v;
    s->passed++;
    /* the message goes on unchanged: the consumer owns it now */
    if( SMX_CHANNEL_WRITE( h, c_gate, value, msg ) != 0 )
        return SMX_NET_END;
    return SMX_NET_RETURN;
}

/******************************************************************************/
void c_gate_cleanup( void* h, void* state )
{
    if( state == NULL )
        return;
    c_gate_state_t* s = state;
    SMX_LOG( h, notice, "passed %lu, dropped %lu", s->passed, s->dropped );
    free( s );
}

/******************************************************************************/
int c_gate_init( void* h, void** state )
{
    bson_t* conf = SMX_NET_GET_CONF( h );
    smx_config_error_t err;
    int v;

    c_gate_state_t* s = calloc( 1, sizeof( c_gate_state_t ) );
    if( s == NULL )
        return -1;
    *state = s;
    s->min = LLONG_MIN;
    s->max = LLONG_MAX;

    v = smx_config_get_int_err( conf, "min", &err );
    if( err == SMX_CONFIG_ERROR_NO_ERROR )
        s->min = v;
    else if( err == SMX_CONFIG_ERROR_BAD_TYPE )
    {
        SMX_LOG( h, error, "property 'min' must be an integer" );
        return -1;
    }
    v = smx_config_get_int_err( conf, "max", &err );
    if( err == SMX_CONFIG_ERROR_NO_ERROR )
        s->max = v;
    else if( err == SMX_CONFIG_ERROR_BAD_TYPE )
    {
        SMX_LOG( h, error, "property 'max' must be an integer" );
        return -1;
    }
    if( smx_config_init_bool( conf, "dedup", &s->dedup ) == SMX_CONFIG_ERROR_BAD_TYPE )
    {
        SMX_LOG( h, error, "property 'dedup' must be a boolean" );
        return -1;
    }
    if( s->min > s->max )
    {
        SMX_LOG( h, error, "min (%lld) is larger than max (%lld)", s->min, s->max );
        return -1;
    }
    return 0;
}

/******************************************************************************/
/* DO NOT MODIFY!                                                             */
/******************************************************************************/
void* start_routine_c_gate( void* h )
{
    return START_ROUTINE_NET( h, c_gate );
}
