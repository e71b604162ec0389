/**
 * @file    c_burst.c
 *
 * The streamix box c_burst: a source that sends the values 1, 2, ..., `count` as fast as it
 * can, each write bounded by a write timeout. A write that finds no room in time drops its
 * message; the box counts those instead of giving up, and at the end reports one line
 *
 *     c_burst NAME: sent=N timed_out=T failed=F
 *
 * on stdout: `sent` written, `timed_out` dropped because the consumer was too slow, `failed`
 * refused for another reason (the consumer ended).
 *
 * Signature: box c_burst( out value )   (payload: one `long long`)
 *
 * Configuration:
 *   - count      (int, optional): how many values (default 10)
 *   - timeout_ms (int, optional): the write timeout (default 1; 0: wait as long as it takes)
 *
 * Written in the style of the original runtime's boxes; its port header comes from
 * `smxrun headers nets/c_write_timeout.smx -o DIR`.
 */

#include <stdio.h>
#include <stdlib.h>
#include <bson.h>
#include "smxrts.h"
#include "c_burst.h"

/** The state of one c_burst net. */
typedef struct c_burst_state_s
{
    long long count;         /**< values to send */
    long long next;          /**< the next value */
    unsigned long sent;
    unsigned long timed_out;
    unsigned long failed;
} c_burst_state_t;

/******************************************************************************/
int c_burst( void* h, void* state )
{
    c_burst_state_t* s = state;

    if( s->next > s->count )
        return SMX_NET_END;
    long long* data = malloc( sizeof( long long ) );
    if( data == NULL )
        return -1;
    *data = s->next++;
    smx_msg_t* msg = SMX_MSG_CREATE( h, data, sizeof( long long ), NULL, NULL, NULL );
    if( msg == NULL )
    {
        free( data );
        return -1;
    }
    /* the runtime owns the message from here on, also when the write fails */
    if( SMX_CHANNEL_WRITE( h, c_burst, value, msg ) == 0 )
        s->sent++;
    else if( SMX_GET_WRITE_ERROR( h, c_burst, value ) == SMX_CHANNEL_ERR_TIMEOUT )
        s->timed_out++;
    else
    {
        s->failed++;
        return SMX_NET_END;
    }
    return SMX_NET_RETURN;
}

/******************************************************************************/
void c_burst_cleanup( void* h, void* state )
{
    c_burst_state_t* s = state;
    if( s == NULL )
        return;
    printf( "c_burst %s: sent=%lu timed_out=%lu failed=%lu\n",
            SMX_NET_GET_NAME( h ) != NULL ? SMX_NET_GET_NAME( h ) : "?", s->sent, s->timed_out,
            s->failed );
    fflush( stdout );
    free( s );
}

/******************************************************************************/
int c_burst_init( void* h, void** state )
{
    bson_t* conf = SMX_NET_GET_CONF( h );
    smx_config_error_t err;
    int timeout_ms;

    c_burst_state_t* s = calloc( 1, sizeof( c_burst_state_t ) );
    if( s == NULL )
        return -1;
    *state = s;
    s->next = 1;

    s->count = smx_config_get_int_err( conf, "count", &err );
    if( err == SMX_CONFIG_ERROR_NO_VALUE )
        s->count = 10;
    else if( err == SMX_CONFIG_ERROR_BAD_TYPE || s->count < 0 )
    {
        SMX_LOG( h, error, "property 'count' must be a non-negative integer" );
        return -1;
    }
    timeout_ms = smx_config_get_int_err( conf, "timeout_ms", &err );
    if( err == SMX_CONFIG_ERROR_NO_VALUE )
        timeout_ms = 1;
    else if( err == SMX_CONFIG_ERROR_BAD_TYPE || timeout_ms < 0 )
    {
        SMX_LOG( h, error, "property 'timeout_ms' must be a non-negative integer" );
        return -1;
    }
    if( timeout_ms > 0 )
        SMX_SET_WRITE_TIMEOUT( h, c_burst, value, timeout_ms / 1000,
                ( timeout_ms % 1000 ) * 1000000L );
    return 0;
}
