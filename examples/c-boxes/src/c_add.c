/**
 * @file    c_add.c
 *
 * The streamix box c_add: adds the latest value of a decoupled input to every value of a
 * coupled one.
 *
 *   - `value` (coupled) triggers the box: one output per input value.
 *   - `offset` (decoupled) is never waited for: a read gives the newest offset if one came
 *     since the last read, otherwise a fresh copy of the last one (the runtime copies it with the
 *     message's copy function), or NULL when no offset was ever sent.
 *
 * With `wait_offset` (the default) the first iteration waits until the first offset has arrived,
 * so that a short-lived offset source gives reproducible results.
 *
 * Signature: box c_add( in value, decoupled in offset, out value )   (payloads: `long long`)
 *
 * Configuration (optional):
 *   - wait_offset (bool, default true): wait for the first offset before the first value
 *   - default     (int, default 0):     offset used while none has arrived
 */

#include <stdlib.h>
#include <bson.h>
#include "smxrts.h"
#include "c_add.h"

/** The state of one c_add net. */
typedef struct c_add_state_s
{
    long long offset;        /**< the offset applied last */
    unsigned long fresh;     /**< reads of `offset` that gave a message */
    unsigned long missing;   /**< reads of `offset` that gave nothing */
} c_add_state_t;

/******************************************************************************/
int c_add( void* h, void* state )
{
    c_add_state_t* s = state;
    smx_msg_t* off;
    smx_msg_t* msg;

    /* decoupled: never blocks */
    off = SMX_CHANNEL_READ( h, c_add, offset );
    if( off != NULL )
    {
        if( off->size == ( int )sizeof( long long ) )
            s->offset = *( long long* )off->data;
        s->fresh++;
        SMX_MSG_DESTROY( h, off );
    }
    else
    {
        s->missing++;
        if( SMX_NET_IS_FIRST_RUN( h ) )
            SMX_LOG( h, notice, "no offset yet (%s), using %lld",
                    smx_channel_strerror( SMX_GET_READ_ERROR( h, c_add, offset ) ),
                    s->offset );
    }

    /* coupled: the runtime waited for it before this iteration */
    msg = SMX_CHANNEL_READ( h, c_add, value );
    if( msg == NULL )
        return SMX_NET_RETURN; /* producer ended and drained: the runtime ends this net */
    if( msg->size != ( int )sizeof( long long ) )
    {
        SMX_LOG( h, error, "unexpected payload of %d bytes", msg->size );
        SMX_MSG_DESTROY( h, msg );
        return SMX_NET_END;
    }

    /* the box owns the message: change it in place and pass it on */
    *( long long* )msg->data += s->offset;
    if( SMX_CHANNEL_WRITE( h, c_add, value, msg ) != 0 )
        return SMX_NET_END;
    return SMX_NET_RETURN;
}

/******************************************************************************/
void c_add_cleanup( void* h, void* state )
{
    if( state == NULL )
        return;
    c_add_state_t* s = state;
    SMX_LOG( h, info, "offset reads: %lu with a message, %lu without", s->fresh, s->missing );
    free( s );
}

/******************************************************************************/
int c_add_init( void* h, void** state )
{
    bson_t* conf = SMX_NET_GET_CONF( h );
    smx_config_error_t err;
    bool wait_offset;
    int dflt;

    c_add_state_t* s = calloc( 1, sizeof( c_add_state_t ) );
    if( s == NULL )
        return -1;
    *state = s;

    dflt = smx_config_get_int_err( conf, "default", &err );
    if( err == SMX_CONFIG_ERROR_BAD_TYPE )
    {
        SMX_LOG( h, error, "property 'default' must be an integer" );
        return -1;
    }
    s->offset = dflt;

    wait_offset = smx_config_get_bool_err( conf, "wait_offset", &err );
    if( err == SMX_CONFIG_ERROR_NO_VALUE )
        wait_offset = true;
    else if( err == SMX_CONFIG_ERROR_BAD_TYPE )
    {
        SMX_LOG( h, error, "property 'wait_offset' must be a boolean" );
        return -1;
    }
    if( wait_offset && SMX_CHANNEL_ACTIVATE_DECOUPLED_READ_BLOCK( h, c_add, offset ) != 0 )
    {
        SMX_LOG( h, error, "cannot wait on port 'offset' (is it decoupled?)" );
        return -1;
    }
    return 0;
}

/******************************************************************************/
/* DO NOT MODIFY!                                                             */
/******************************************************************************/
void* start_routine_c_add( void* h )
{
    return START_ROUTINE_NET( h, c_add );
}
