/**
 * @file    c_lines.c
 *
 * The streamix box c_lines: a source that reads a text file, one integer per line, and sends
 * each number as a message (payload: one `long long`). Blank lines and lines starting with `#`
 * are skipped; a line that is not a number is logged and skipped. The net ends at the end of
 * the file, or after `limit` values.
 *
 * Signature: box c_lines( out value )
 *
 * Configuration:
 *   - file     (string, required): the file to read
 *   - limit    (int, optional):    send at most this many values (0: no limit)
 *   - sleep_us (int, optional):    pause after each value, in microseconds
 *
 * Written in the style of the original runtime's boxes (SMX_* macros of smxrts.h).
 */

#define _POSIX_C_SOURCE 200809L /* nanosleep, also with -std=c99 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bson.h>
#include "smxrts.h"
#include "c_lines.h"

/** The state of one c_lines net. */
typedef struct c_lines_state_s
{
    FILE* fp;            /**< the open input file */
    long line;           /**< number of the line read last */
    int limit;           /**< 0 or the maximal number of values */
    int sent;            /**< values sent so far */
    int sleep_us;        /**< pause after each value */
} c_lines_state_t;

/******************************************************************************/
int c_lines( void* h, void* state )
{
    c_lines_state_t* s = state;
    char buf[256];

    if( s->limit > 0 && s->sent >= s->limit )
        return SMX_NET_END;

    while( fgets( buf, sizeof( buf ), s->fp ) != NULL )
    {
        char* end;
        char* p = buf;
        long long value;

        s->line++;
        while( *p == ' ' || *p == '\t' )
            p++;
        if( *p == '\0' || *p == '\n' || *p == '#' )
            continue;

        errno = 0;
        value = strtoll( p, &end, 10 );
        while( *end == ' ' || *end == '\t' || *end == '\r' || *end == '\n' )
            end++;
        if( end == p || *end != '\0' || errno != 0 )
        {
            SMX_LOG( h, warn, "line %ld is not a number, skipped", s->line );
            continue;
        }

        long long* data = malloc( sizeof( long long ) );
        if( data == NULL )
        {
            SMX_LOG( h, error, "out of memory" );
            return SMX_NET_END;
        }
        *data = value;
        smx_msg_t* msg = SMX_MSG_CREATE( h, data, sizeof( long long ), NULL, NULL, NULL );
        if( msg == NULL )
        {
            free( data );
            return SMX_NET_END;
        }
        if( SMX_CHANNEL_WRITE( h, c_lines, value, msg ) != 0 )
        {
            /* the consumer has ended: nobody wants the rest of the file */
            SMX_LOG( h, notice, "consumer gone (%s) after %d values",
                    smx_channel_strerror( SMX_GET_WRITE_ERROR( h, c_lines, value ) ),
                    s->sent );
            return SMX_NET_END;
        }
        s->sent++;
        if( s->sleep_us > 0 )
        {
            struct timespec pause = { s->sleep_us / 1000000, ( s->sleep_us % 1000000 ) * 1000L };
            nanosleep( &pause, NULL );
        }
        return SMX_NET_RETURN;
    }
    SMX_LOG( h, info, "end of file after %ld lines, %d values", s->line, s->sent );
    return SMX_NET_END;
}

/******************************************************************************/
void c_lines_cleanup( void* h, void* state )
{
    ( void )( h );
    if( state == NULL )
        return;
    c_lines_state_t* s = state;
    if( s->fp != NULL )
        fclose( s->fp );
    free( s );
}

/******************************************************************************/
int c_lines_init( void* h, void** state )
{
    bson_t* conf = SMX_NET_GET_CONF( h );
    smx_config_error_t err;
    const char* name = smx_config_get_string( conf, "file", NULL );

    if( name == NULL )
    {
        SMX_LOG( h, error, "invalid box configuration, no property 'file'" );
        return -1;
    }

    c_lines_state_t* s = calloc( 1, sizeof( c_lines_state_t ) );
    if( s == NULL )
        return -1;
    *state = s;

    s->limit = smx_config_get_int_err( conf, "limit", &err );
    if( err == SMX_CONFIG_ERROR_BAD_TYPE || s->limit < 0 )
    {
        SMX_LOG( h, error, "property 'limit' must be a non-negative integer" );
        return -1;
    }
    s->sleep_us = smx_config_get_int_err( conf, "sleep_us", &err );
    if( err == SMX_CONFIG_ERROR_BAD_TYPE || s->sleep_us < 0 )
    {
        SMX_LOG( h, error, "property 'sleep_us' must be a non-negative integer" );
        return -1;
    }

    s->fp = fopen( name, "r" );
    if( s->fp == NULL )
    {
        SMX_LOG( h, error, "cannot open file '%s': %s", name, strerror( errno ) );
        return -1;
    }
    SMX_LOG( h, notice, "reading '%s'", name );
    return 0;
}

/******************************************************************************/
/* DO NOT MODIFY!                                                             */
/******************************************************************************/
void* start_routine_c_lines( void* h )
{
    return START_ROUTINE_NET( h, c_lines );
}
