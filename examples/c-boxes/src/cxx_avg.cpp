/**
 * @file    cxx_avg.cpp
 *
 * The streamix box cxx_avg, written in C++ with the original runtime's macros: the moving
 * average (integer, truncated towards zero) of the last `window` values. Every input value gives
 * one output value: the average of the up to `window` values seen last.
 *
 * The output messages carry a `long long` allocated with `new`; they come with their own copy
 * and destroy functions, so that whoever frees or copies them downstream (a C box, the runtime's
 * fan-out or a decoupled re-read) uses `delete` / `new` as it must.
 *
 * Signature: box cxx_avg( in value, out value )
 * Configuration: window (int, default 4, at least 1)
 */

#include <cstdlib>
#include <deque>
#include <new>
#include <numeric>
#include <bson.h>
#include "smxrts.h"
#include "cxx_avg.h" // declares cxx_avg, cxx_avg_init, cxx_avg_cleanup with C linkage

namespace
{

struct Avg
{
    std::size_t window = 4;
    std::deque<long long> last;
    unsigned long count = 0;
};

} // namespace

// Copy and destroy functions of the output messages: the runtime and other boxes call them
// through the message, from C, so they have C linkage (and must not throw).
extern "C" {

static void* avg_copy( void* data, size_t size )
{
    (void)size;
    return new ( std::nothrow ) long long( *static_cast<long long*>( data ) );
}

static void avg_destroy( void* data )
{
    delete static_cast<long long*>( data );
}

} // extern "C"

/******************************************************************************/
int cxx_avg( void* h, void* state )
{
    Avg* avg = static_cast<Avg*>( state );
    smx_msg_t* in = SMX_CHANNEL_READ( h, cxx_avg, value );
    if( in == nullptr )
        return SMX_NET_RETURN;

    long long v = 0;
    if( in->size == static_cast<int>( sizeof( long long ) ) )
        v = *static_cast<long long*>( SMX_MSG_UNPACK( in ) );
    SMX_MSG_DESTROY( h, in );

    // No exception may leave a box function (it would unwind into the runtime).
    try
    {
        avg->last.push_back( v );
    }
    catch( const std::bad_alloc& )
    {
        SMX_LOG( h, error, "out of memory" );
        return SMX_NET_END;
    }
    if( avg->last.size() > avg->window )
        avg->last.pop_front();
    long long sum = std::accumulate( avg->last.begin(), avg->last.end(), 0LL );
    long long* mean = new ( std::nothrow ) long long( sum / static_cast<long long>( avg->last.size() ) );
    if( mean == nullptr )
        return SMX_NET_END;
    avg->count++;

    smx_msg_t* out = SMX_MSG_CREATE( h, mean, sizeof( long long ), avg_copy, avg_destroy, nullptr );
    if( out == nullptr )
    {
        delete mean;
        return SMX_NET_END;
    }
    SMX_MSG_SET_TYPE( out, "long long" );
    if( SMX_CHANNEL_WRITE( h, cxx_avg, value, out ) != 0 )
        return SMX_NET_END;
    return SMX_NET_RETURN;
}

/******************************************************************************/
void cxx_avg_cleanup( void* h, void* state )
{
    Avg* avg = static_cast<Avg*>( state );
    if( avg == nullptr )
        return;
    SMX_LOG( h, info, "averaged %lu values over a window of %zu", avg->count, avg->window );
    delete avg;
}

/******************************************************************************/
int cxx_avg_init( void* h, void** state )
{
    bson_t* conf = static_cast<bson_t*>( SMX_NET_GET_CONF( h ) );
    smx_config_error_t err;
    int window = smx_config_get_int_err( conf, "window", &err );
    if( err == SMX_CONFIG_ERROR_NO_VALUE )
        window = 4;
    else if( err != SMX_CONFIG_ERROR_NO_ERROR || window < 1 )
    {
        SMX_LOG( h, error, "property 'window' must be an integer of at least 1" );
        return -1;
    }

    Avg* avg = new ( std::nothrow ) Avg;
    if( avg == nullptr )
        return -1;
    avg->window = static_cast<std::size_t>( window );
    *state = avg;
    return 0;
}

/******************************************************************************/
/* DO NOT MODIFY!                                                             */
/******************************************************************************/
void* start_routine_cxx_avg( void* h )
{
    return START_ROUTINE_NET( h, cxx_avg );
}
