/*
 * bson.h - stand-in for libbson's header, so that a box written for the original runtime, which
 * includes <bson.h> only to declare `bson_t* conf = SMX_NET_GET_CONF(h);` and to call the
 * smx_config_get_* helpers, builds without libbson.
 *
 * smx's net configuration is not a BSON document: `bson_t` here is an opaque type and the
 * configuration handle may only be passed to smx_config_get_*. When a real libbson header comes
 * later on the include path (e.g. -I include -I /usr/include/libbson-1.0), it is used instead,
 * so that boxes using libbson for their own data still build; the configuration handle is still
 * not a bson_t they could iterate. Define SMX_BSON_SHIM_ONLY to never look for libbson.
 */
#ifndef SMX_BSON_SHIM_H
#define SMX_BSON_SHIM_H

#if !defined(SMX_BSON_SHIM_ONLY) && defined(__has_include_next)
#if __has_include_next(<bson.h>)
#include_next <bson.h>
#define SMX_BSON_IS_LIBBSON 1
#endif
#endif

#ifndef SMX_BSON_IS_LIBBSON
/* The same struct tag as libbson's, so both declarations can meet in one program. */
typedef struct _bson_t bson_t;
#endif

#endif /* SMX_BSON_SHIM_H */
