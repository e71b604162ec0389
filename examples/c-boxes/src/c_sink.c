/**
 * @file    c_sink.c
 *
 * The streamix box c_sink: consumes values and keeps the books in its state (how many, their
 * sum, the smallest and the largest). Optionally writes every value to a file, one per line. At
 * the end it reports the state: one line
 *
 *     c_sink NAME: count=N sum=S min=A max=B
 *
 * written to the `report` file, or to stdout when none is configured.
 *
 * Signature: box c_sink( in value )   (payload: one `long long`)
 *
 * Configuration (all optional):
 *   - file       (string): write each value to this file
 *   - report     (string): write the summary line to this file instead of stdout
 *   - timeout_ms (int):    wait at most this long for a value; an iteration that timed out
 *                          logs a warning and goes on (the original runtime's read timeout,
 *                          which bounds the firing rule's wait)
 *   - sleep_us   (int):    pause after each value, in microseconds (a slow consumer)
 */

#define _POSIX_C_SOURCE 200809L /* strdup, also with -std=c99 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bson.h>
#include "smxrts.h"
#include "c_sink.h"

/** The books of one c_sink net. */
typedef struct c_sink_state_s
{
    FILE* values;            /**< NULL or the file receiving every value */
    char* report;            /**< NULL or the path of the summary file */
    unsigned long count;
    long long sum;
    long long min;
    long long max;
    unsigned long timeouts;
    int sleep_us;            /**< pause after each value */
} c_sink_state_t;

/******************************************************************************/
int c_sink( void* h, void* state )
{
    c_sink_state_t* s = state;
    smx_msg_t* msg = SMX_CHANNEL_READ( h, c_sink, value );

    if( msg == NULL )
    {
        if( SMX_HAS_READ_TIMEOUT( h, c_sink, value ) )
        {
            s->timeouts++;
            SMX_LOG( h, warn, "no value within the timeout (iteration %lu)",
                    SMX_NET_GET_COUNT( h ) );
            return SMX_NET_CONTINUE;
        }
        return SMX_NET_RETURN; /* ended (NO_TARGET) */
    }

    long long v = 0;
    if( msg->size == ( int )sizeof( long long ) )
        v = *( long long* )SMX_MSG_UNPACK( msg );
    else
        SMX_LOG( h, warn, "unexpected payload of %d bytes", msg->size );
    SMX_MSG_DESTROY( h, msg );

    if( s->count == 0 || v < s->min )
        s->min = v;
    if( s->count == 0 || v > s->max )
        s->max = v;
    s->count++;
    s->sum += v;
    if( SMX_NET_IS_FIRST_RUN( h ) )
        SMX_LOG( h, info, "first value: %lld", v );
    if( s->values != NULL )
        fprintf( s->values, "%lld\n", v );
    if( s->sleep_us > 0 )
    {
        struct timespec pause = { s->sleep_us / 1000000, ( s->sleep_us % 1000000 ) * 1000L };
        nanosleep( &pause, NULL );
    }
    return SMX_NET_RETURN;
}

/******************************************************************************/
void c_sink_cleanup( void* h, void* state )
{
    if( state == NULL )
        return;
    /* the same pointer as `state`: the runtime keeps what init stored */
    c_sink_state_t* s = SMX_NET_GET_STATE( h ) != NULL ? SMX_NET_GET_STATE( h ) : state;
    FILE* out = stdout;

    if( s->report != NULL )
    {
        out = fopen( s->report, "w" );
        if( out == NULL )
        {
            SMX_LOG( h, error, "cannot write report '%s': %s", s->report, strerror( errno ) );
            out = stdout;
        }
    }
    fprintf( out, "c_sink %s: count=%lu sum=%lld min=%lld max=%lld\n",
            SMX_NET_GET_NAME( h ) != NULL ? SMX_NET_GET_NAME( h ) : "?", s->count, s->sum,
            s->count > 0 ? s->min : 0, s->count > 0 ? s->max : 0 );
    if( out != stdout )
        fclose( out );
    else
        fflush( stdout );
    SMX_LOG( h, notice, "%lu values (id %u, %s), %lu timeouts", s->count, SMX_NET_GET_ID( h ),
            SMX_NET_GET_IMPL( h ) != NULL ? SMX_NET_GET_IMPL( h ) : "?", s->timeouts );

    if( s->values != NULL )
        fclose( s->values );
    free( s->report );
    free( s );
}

/******************************************************************************/
int c_sink_init( void* h, void** state )
{
    bson_t* conf = SMX_NET_GET_CONF( h );
    smx_config_error_t err;
    const char* file = smx_config_get_string( conf, "file", NULL );
    const char* report = smx_config_get_string( conf, "report", NULL );
    int timeout_ms;

    c_sink_state_t* s = calloc( 1, sizeof( c_sink_state_t ) );
    if( s == NULL )
        return -1;
    *state = s;

    if( report != NULL )
    {
        s->report = strdup( report );
        if( s->report == NULL )
            return -1;
    }
    if( file != NULL )
    {
        s->values = fopen( file, "w" );
        if( s->values == NULL )
        {
            SMX_LOG( h, error, "cannot open file '%s': %s", file, strerror( errno ) );
            return -1;
        }
    }

    timeout_ms = smx_config_get_int_err( conf, "timeout_ms", &err );
    if( err == SMX_CONFIG_ERROR_BAD_TYPE || timeout_ms < 0 )
    {
        SMX_LOG( h, error, "property 'timeout_ms' must be a non-negative integer" );
        return -1;
    }
    s->sleep_us = smx_config_get_int_err( conf, "sleep_us", &err );
    if( err == SMX_CONFIG_ERROR_BAD_TYPE || s->sleep_us < 0 )
    {
        SMX_LOG( h, error, "property 'sleep_us' must be a non-negative integer" );
        return -1;
    }
    if( timeout_ms > 0 )
        SMX_SET_READ_TIMEOUT( h, c_sink, value, timeout_ms / 1000,
                ( timeout_ms % 1000 ) * 1000000L );
    return 0;
}

/******************************************************************************/
/* DO NOT MODIFY!                                                             */
/******************************************************************************/
void* start_routine_c_sink( void* h )
{
    return START_ROUTINE_NET( h, c_sink );
}
