/*
 * smxrts.h - the Streamix runtime's box API, for box sources written for the original runtime
 * (smx-core-rts / streamix-rts) to build unchanged against smx.
 *
 * A box `foo` is three C functions, resolved by name when `smxrun ... --boxes LIB.so` loads it:
 *
 *     int  foo_init(void *h, void **state);   0 on success; anything else fails the net
 *     int  foo(void *h, void *state);         one iteration: SMX_NET_RETURN/_CONTINUE/_END
 *     void foo_cleanup(void *h, void *state); free the state (state may be NULL)
 *
 * plus the boilerplate `void *start_routine_foo(void *h) { return START_ROUTINE_NET(h, foo); }`,
 * which smx does not need but which compiles and links. Port macros take the implementation name
 * and the port name as bare words: SMX_CHANNEL_READ(h, foo, x) reads input `x` of box `foo`. They
 * use the port index enums of the generated header foo_sig.h (`smxrun headers NET.smx -o DIR`).
 *
 * Everything expands to calls of the functions in smx_abi.h. Differences from the original
 * runtime are listed in docs/c-abi.md; in short: the original's channel pointers, shared state,
 * type/content filters, backups, source queues and test mode (SMX_TESTING) are not provided.
 */
#ifndef SMXRTS_H
#define SMXRTS_H

/* The original header pulled these in (through zlog, pthread and libbson); boxes rely on it. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Declares bson_t: smx's shim (include/bson.h), or libbson itself when it comes later on the
 * include path. The configuration is NOT a real BSON document; read it with smx_config_get_*. */
#include <bson.h>

#include "smx_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Port index of port `port` of box `box` in direction `mode` (in/out), from box_sig.h. */
#define SMX_SIG_PORT_IDX(box, port, mode) SMX_PORT_IDX_##box##_##mode##_##port

/* Ports ------------------------------------------------------------------------------------- */

/* smx_msg_t* or NULL (then see SMX_GET_READ_ERROR). The caller owns the message. */
#define SMX_CHANNEL_READ(h, box, port) smx_read((h), SMX_PORT_IDX_##box##_in_##port)

/* 0 or -1. Ownership of `msg` passes to the runtime in both cases. */
#define SMX_CHANNEL_WRITE(h, box, port, msg)                                                    \
    smx_write((h), SMX_PORT_IDX_##box##_out_##port, (msg))

#define SMX_GET_READ_ERROR(h, box, port)                                                        \
    ((smx_channel_err_t)smx_read_error((h), SMX_PORT_IDX_##box##_in_##port))

#define SMX_GET_WRITE_ERROR(h, box, port)                                                       \
    ((smx_channel_err_t)smx_write_error((h), SMX_PORT_IDX_##box##_out_##port))

#define SMX_HAS_READ_TIMEOUT(h, box, port)                                                      \
    (smx_read_error((h), SMX_PORT_IDX_##box##_in_##port) == SMX_CHANNEL_ERR_TIMEOUT)

#define SMX_SET_READ_TIMEOUT(h, box, port, sec, nsec)                                           \
    smx_set_read_timeout((h), SMX_PORT_IDX_##box##_in_##port, (long)(sec), (long)(nsec))

#define SMX_SET_WRITE_TIMEOUT(h, box, port, sec, nsec)                                          \
    smx_set_write_timeout((h), SMX_PORT_IDX_##box##_out_##port, (long)(sec), (long)(nsec))

/* The next iteration waits for a new message on this decoupled input (once). */
#define SMX_CHANNEL_ACTIVATE_DECOUPLED_READ_BLOCK(h, box, port)                                 \
    smx_block_next_read((h), SMX_PORT_IDX_##box##_in_##port)

/* smx extension: wait for a new message on the input (the original's await_and_read). */
#define SMX_CHANNEL_READ_BLOCKING(h, box, port)                                                 \
    smx_read_blocking((h), SMX_PORT_IDX_##box##_in_##port)

/* Messages ---------------------------------------------------------------------------------- */

#define SMX_MSG_CREATE(h, data, dsize, fcopy, ffree, funpack)                                   \
    smx_msg_create((h), (data), (dsize), (fcopy), (ffree), (funpack))
#define SMX_MSG_COPY(h, msg) smx_msg_copy((h), (msg))
#define SMX_MSG_DESTROY(h, msg) smx_msg_destroy((h), (msg), 1)
#define SMX_MSG_UNPACK(msg) smx_msg_unpack(msg)
#define SMX_MSG_SET_TYPE(msg, type) smx_msg_set_type((msg), (type))
#define SMX_MSG_PREVENT_BACKUP(msg) smx_msg_prevent_backup(msg)

/* The net ------------------------------------------------------------------------------------ */

/* The configuration handle (declare it as `bson_t* conf = SMX_NET_GET_CONF(h);`). */
#define SMX_NET_GET_CONF(h) smx_net_conf(h)
/* Run arguments (-a/-A of the original) do not exist in smx: always NULL. */
#define SMX_NET_GET_ARGUMENTS(h) ((void)(h), (void *)0)
#define SMX_NET_GET_STATE(h) smx_net_state(h)
#define SMX_NET_GET_COUNT(h) smx_net_count(h)
#define SMX_NET_GET_ID(h) smx_net_id(h)
#define SMX_NET_GET_NAME(h) smx_net_name(h)
#define SMX_NET_GET_IMPL(h) smx_net_impl(h)
#define SMX_NET_GET_PRIO(h) smx_net_prio(h)
#define SMX_NET_IS_FIRST_RUN(h) (smx_net_count(h) == 1 ? 1 : 0)

#define START_ROUTINE_NET(h, box) smx_net_start_routine((h), box, box##_init, box##_cleanup)

/* Logging ------------------------------------------------------------------------------------ */

/* SMX_LOG(h, level, fmt, ...): level is a bare word, one of the constants below. */
enum smx_log_level_name_e
{
    SMX_LOG_LEVEL_debug = SMX_LOG_DEBUG,
    SMX_LOG_LEVEL_info = SMX_LOG_INFO,
    SMX_LOG_LEVEL_event = SMX_LOG_EVENT,
    SMX_LOG_LEVEL_notice = SMX_LOG_NOTICE,
    SMX_LOG_LEVEL_warn = SMX_LOG_WARN,
    SMX_LOG_LEVEL_error = SMX_LOG_ERROR,
    SMX_LOG_LEVEL_fatal = SMX_LOG_FATAL
};

#define SMX_LOG(h, level, ...) smx_logf((h), SMX_LOG_LEVEL_##level, __VA_ARGS__)

/* Utilities the original exported ------------------------------------------------------------ */

static inline void *smx_malloc(size_t size)
{
    return malloc(size);
}

#ifdef __cplusplus
}
#endif

#endif /* SMXRTS_H */
