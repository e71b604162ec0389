/*
 * smx_abi.h - the C ABI between smx (`smxrun`) and boxes written in C or C++.
 *
 * Both box APIs sit on top of this file:
 *   - smxrts.h : the Streamix runtime's source-level macros (SMX_CHANNEL_READ(h, box, port), ...),
 *                so that box sources written for the original runtime build unchanged;
 *   - smx.h    : smx's own plain-function API for new code (no macros that need the box name).
 * Every macro of either header expands to a call of one of the functions declared here (or of a
 * static inline helper below that only calls them and touches public message fields). The runtime
 * implements and exports exactly these functions; nothing else is needed to load a box library.
 *
 * Rules shared by all functions (see docs/c-abi.md for the full contract):
 *   - `h` is the box handle the runtime passes to NAME_init, NAME and NAME_cleanup. It is only
 *     valid in the net's own thread and until NAME_cleanup returns. Every function accepts a NULL
 *     `h` and then does nothing and returns its error value.
 *   - Port indices count the box's declared input ports (resp. output ports) from 0, in
 *     declaration order. The generated header NAME_sig.h names them SMX_PORT_IDX_NAME_in_PORT /
 *     SMX_PORT_IDX_NAME_out_PORT; smx_in_index()/smx_out_index() look them up by name.
 *   - No function blocks except smx_read_blocking() and smx_write() (on a full coupled channel).
 */
#ifndef SMX_ABI_H
#define SMX_ABI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* Version of this ABI; bumped on any incompatible change. */
#define SMX_ABI_VERSION 1

#if defined(__GNUC__) || defined(__clang__)
#define SMX_ABI_PRINTF(fmt_idx, args_idx) __attribute__((format(printf, fmt_idx, args_idx)))
#else
#define SMX_ABI_PRINTF(fmt_idx, args_idx)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------- */
/* Messages                                                                                     */
/* ------------------------------------------------------------------------------------------- */

/* Deep-copies `size` bytes of payload `data`; returns the copy (NULL on failure). */
typedef void *(*smx_msg_copy_fn)(void *data, size_t size);
/* Frees payload `data`. */
typedef void (*smx_msg_destroy_fn)(void *data);
/* Returns the usable view of payload `data` (often `data` itself). */
typedef void *(*smx_msg_unpack_fn)(void *data);

typedef struct smx_msg_s smx_msg_t;

/*
 * A message. Allocated only by the runtime (smx_msg_create, smx_msg_copy, reads); freed only by
 * the runtime (smx_msg_destroy, or a write, which always takes ownership). Boxes read and may
 * change `data`, `size` and the three functions of a message they own; they never free() it.
 * The three function pointers are never NULL in a message the runtime hands out: NULL given to
 * smx_msg_create selects the defaults (copy: malloc + memcpy of `size` bytes; destroy: free;
 * unpack: identity).
 */
struct smx_msg_s
{
    unsigned long long id;      /* unique message id (runtime-assigned) */
    char *type;                 /* optional type name, owned by the message (smx_msg_set_type) */
    bool prevent_backup;        /* kept for source compatibility: copied, not acted on by smx */
    void *data;                 /* the payload */
    int size;                   /* payload size in bytes, as given to smx_msg_create */
    smx_msg_copy_fn copy;       /* used for fan-out copies, decoupled re-reads, SMX_MSG_COPY */
    smx_msg_destroy_fn destroy; /* used whenever the runtime or SMX_MSG_DESTROY drops the message */
    smx_msg_unpack_fn unpack;   /* used by SMX_MSG_UNPACK */
    /* smx additions, owned by the runtime: boxes may read them and must not change them. */
    unsigned long long seq;     /* sequence number of the stream the message belongs to */
    unsigned long long sent_ns; /* send time (ns, runtime's monotonic clock) for latency books */
    void *reserved;             /* runtime-private */
};

/* ------------------------------------------------------------------------------------------- */
/* Codes                                                                                        */
/* ------------------------------------------------------------------------------------------- */

/* Port error codes (smx_read_error / smx_write_error); values as in the original runtime. */
typedef enum smx_channel_err_e
{
    SMX_CHANNEL_ERR_NONE = 0,            /* the last operation on the port succeeded */
    SMX_CHANNEL_ERR_NO_DEFAULT = -99,    /* (kept for source compatibility; not set by smx) */
    SMX_CHANNEL_ERR_NO_TARGET = -98,     /* the peer has ended (input drained / consumer gone) */
    SMX_CHANNEL_ERR_DL_MISS = -97,       /* (kept for source compatibility; not set by smx) */
    SMX_CHANNEL_ERR_NO_DATA = -96,       /* coupled input empty although not ended; NULL written */
    SMX_CHANNEL_ERR_NO_SPACE = -95,      /* (kept for source compatibility; not set by smx) */
    SMX_CHANNEL_ERR_FILTER = -94,        /* (kept for source compatibility; not set by smx) */
    SMX_CHANNEL_ERR_UNINITIALISED = -93, /* no such port, I/O outside a step, or decoupled input
                                            that never received anything */
    SMX_CHANNEL_ERR_TIMEOUT = -92,       /* the port's read/write timeout expired */
    SMX_CHANNEL_ERR_CV = -91,            /* (kept for source compatibility; not set by smx) */
    SMX_CHANNEL_ERR_OPEN = -90,          /* the port is declared `open` and is not connected */
    SMX_CHANNEL_ERR_BAD_IDX = -89        /* (kept for source compatibility; not set by smx) */
} smx_channel_err_t;

/* Configuration lookup errors (smx_config_get_*_err); values as in the original runtime. */
typedef enum smx_config_error_e
{
    SMX_CONFIG_ERROR_NO_ERROR = 0,
    SMX_CONFIG_ERROR_BAD_TYPE = -199, /* the key exists but its value has another type */
    SMX_CONFIG_ERROR_NO_VALUE = -198  /* the key does not exist */
} smx_config_error_t;

/* What NAME() returns after one iteration. */
enum smx_thread_state_e
{
    SMX_NET_RETURN = 0,   /* let the runtime decide (end once all triggering inputs ended and are
                             drained, or all consumers ended) */
    SMX_NET_CONTINUE = 1, /* go on unconditionally */
    SMX_NET_END = 2       /* end this net after this iteration */
};

/* Log levels (the original runtime's zlog levels). */
enum smx_log_level_e
{
    SMX_LOG_DEBUG = 20,
    SMX_LOG_INFO = 40,
    SMX_LOG_EVENT = 50,
    SMX_LOG_NOTICE = 60,
    SMX_LOG_WARN = 80,
    SMX_LOG_ERROR = 100,
    SMX_LOG_FATAL = 120
};

/* ------------------------------------------------------------------------------------------- */
/* The exported functions (implemented by the runtime)                                          */
/* ------------------------------------------------------------------------------------------- */

/* Ports ------------------------------------------------------------------------------------- */

/* Takes the next message of input `in` without blocking (the runtime has already waited for the
 * firing rule). NULL and an error code when there is none; a decoupled input returns a fresh
 * copy of its latest value when nothing new came. The caller owns the result. */
smx_msg_t *smx_read(void *h, int in);

/* Waits for a new message on input `in` (also on a decoupled input: never a duplicate), at most
 * the port's read timeout if one is set. NULL with NO_TARGET once the producer has ended and the
 * channel is drained, or with TIMEOUT. The caller owns the result. */
smx_msg_t *smx_read_blocking(void *h, int in);

/* Passes `msg` to output `out`; the runtime owns it afterwards, whatever the result. Blocks
 * while a coupled channel is full. Returns 0 when the message was delivered (or dropped on an
 * unconnected `open` port), -1 when it was refused and destroyed (consumer ended, NULL message,
 * no such port, or called outside a step). */
int smx_write(void *h, int out, smx_msg_t *msg);

/* The code (smx_channel_err_t) of the last read / write on the port in the current iteration;
 * SMX_CHANNEL_ERR_NONE at the start of every iteration. */
int smx_read_error(void *h, int in);
int smx_write_error(void *h, int out);

/* Read timeout of input `in`: bounds how long the firing rule waits for a message on it before
 * the next step (then smx_read gives NULL with TIMEOUT), and how long smx_read_blocking waits.
 * Set in init, it holds from the first step. Write timeout of output `out`: bounds how long
 * smx_write waits for room in a full coupled channel; then the message is dropped (counted in
 * the channel's `dropped`) and smx_write returns -1 with TIMEOUT. 0, 0 means no timeout (the
 * default). Returns 0, or -1 for a bad port or negative value. */
int smx_set_read_timeout(void *h, int in, long sec, long nsec);
int smx_set_write_timeout(void *h, int out, long sec, long nsec);

/* Decoupled input `in`: the next iteration starts only once a new message arrived on it (or its
 * producer ended), once. Returns 0, or -1 for a bad port or a coupled one. */
int smx_block_next_read(void *h, int in);

/* Number of declared input / output ports (connected or not). */
int smx_in_count(void *h);
int smx_out_count(void *h);

/* Index of the input / output port declared with implementation name `name`, or -1. */
int smx_in_index(void *h, const char *name);
int smx_out_index(void *h, const char *name);

/* Messages ---------------------------------------------------------------------------------- */

/* A new message owning `data` (which the message's destroy function will free). NULL functions
 * select the defaults. `h` may be NULL. Returns NULL when out of memory. */
smx_msg_t *smx_msg_create(void *h, void *data, size_t size, smx_msg_copy_fn copy,
        smx_msg_destroy_fn destroy, smx_msg_unpack_fn unpack);

/* A deep copy made with msg->copy; keeps type and prevent_backup. NULL for a NULL message or a
 * failed copy. `h` may be NULL. */
smx_msg_t *smx_msg_copy(void *h, smx_msg_t *msg);

/* Frees a message the caller owns. `deep` != 0: msg->destroy(msg->data) first; 0: the payload is
 * left to the caller. NULL is ignored. `h` may be NULL. */
void smx_msg_destroy(void *h, smx_msg_t *msg, int deep);

/* Sets (a copy of) `type` as the message's type name; NULL clears it. Returns 0, or -1. */
int smx_msg_set_type(smx_msg_t *msg, const char *type);

/* The net --------------------------------------------------------------------------------- */

/* The net's configuration handle for smx_config_get_*; never NULL for a valid `h`, valid until
 * NAME_cleanup returns. */
void *smx_net_conf(void *h);
/* The state NAME_init stored in *state (NULL before init returned). */
void *smx_net_state(void *h);
/* Number of the current iteration, 1 in the first (0 in init). */
unsigned long smx_net_count(void *h);
/* The net's id (its node id in `smxrun graph` and the report); (unsigned)-1 for NULL `h`. */
unsigned int smx_net_id(void *h);
/* Instance name (`Src`) and implementation name (`c_lines`); valid until cleanup returns. */
const char *smx_net_name(void *h);
const char *smx_net_impl(void *h);
/* Real-time priority of the net's thread (0: none). */
int smx_net_prio(void *h);
/* 1 once the run was asked to stop (Ctrl-C): a box that loops or waits inside its step should
 * return SMX_NET_END. */
int smx_net_stop_requested(void *h);
/* The original runtime's thread body, reached through START_ROUTINE_NET in the boilerplate
 * start_routine_NAME. smx resolves NAME, NAME_init and NAME_cleanup itself and does not call
 * start_routine_NAME; if a box calls it anyway, it logs an error and returns NULL. */
void *smx_net_start_routine(void *h, int (*impl)(void *, void *), int (*init)(void *, void **),
        void (*cleanup)(void *, void *));

/* Configuration ------------------------------------------------------------------------------ */
/* `conf` is the handle from smx_net_conf (SMX_NET_GET_CONF); `key` a key of the net's
 * configuration, looked up as written (no nesting). Every value is text, parsed by the getter's
 * type. `err` must not be NULL; on an error the value returned is 0 / false / 0.0 / NULL. A
 * string stays valid until NAME_cleanup returns; `len` (may be NULL) receives its length in
 * bytes. */
int smx_config_get_int_err(void *conf, const char *key, smx_config_error_t *err);
bool smx_config_get_bool_err(void *conf, const char *key, smx_config_error_t *err);
double smx_config_get_double_err(void *conf, const char *key, smx_config_error_t *err);
const char *smx_config_get_string_err(void *conf, const char *key, unsigned int *len,
        smx_config_error_t *err);

/* Logging -------------------------------------------------------------------------------- */

/* 1 when a line of `level` from this net would be logged (check before formatting). */
int smx_log_enabled(void *h, int level);
/* Logs one line of text (no trailing newline needed) under the net's category. */
void smx_log_text(void *h, int level, const char *text);

/* ------------------------------------------------------------------------------------------- */
/* Header-only helpers (built from the functions above; not part of the exported set)          */
/* ------------------------------------------------------------------------------------------- */

static inline int smx_config_get_int(void *conf, const char *key)
{
    smx_config_error_t err;
    return smx_config_get_int_err(conf, key, &err);
}

static inline bool smx_config_get_bool(void *conf, const char *key)
{
    smx_config_error_t err;
    return smx_config_get_bool_err(conf, key, &err);
}

static inline double smx_config_get_double(void *conf, const char *key)
{
    smx_config_error_t err;
    return smx_config_get_double_err(conf, key, &err);
}

static inline const char *smx_config_get_string(void *conf, const char *key, unsigned int *len)
{
    smx_config_error_t err;
    return smx_config_get_string_err(conf, key, len, &err);
}

/* The original's "init" helpers: store the value only if found; return 0 or the error. */
static inline int smx_config_init_int(void *conf, const char *key, int *val)
{
    smx_config_error_t err;
    int v = smx_config_get_int_err(conf, key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        *val = v;
    return (int)err;
}

static inline int smx_config_init_bool(void *conf, const char *key, bool *val)
{
    smx_config_error_t err;
    bool v = smx_config_get_bool_err(conf, key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        *val = v;
    return (int)err;
}

static inline int smx_config_init_double(void *conf, const char *key, double *val)
{
    smx_config_error_t err;
    double v = smx_config_get_double_err(conf, key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        *val = v;
    return (int)err;
}

static inline const char *smx_config_strerror(smx_config_error_t err)
{
    switch (err)
    {
    case SMX_CONFIG_ERROR_NO_ERROR: return "no error";
    case SMX_CONFIG_ERROR_BAD_TYPE: return "bad type";
    case SMX_CONFIG_ERROR_NO_VALUE: return "no value found";
    }
    return "unknown error";
}

static inline const char *smx_channel_strerror(smx_channel_err_t err)
{
    switch (err)
    {
    case SMX_CHANNEL_ERR_NONE: return "no error";
    case SMX_CHANNEL_ERR_NO_DEFAULT: return "no default value on decoupled input";
    case SMX_CHANNEL_ERR_NO_TARGET: return "the peer has ended";
    case SMX_CHANNEL_ERR_DL_MISS: return "deadline miss";
    case SMX_CHANNEL_ERR_NO_DATA: return "no data";
    case SMX_CHANNEL_ERR_NO_SPACE: return "no space";
    case SMX_CHANNEL_ERR_FILTER: return "rejected by filter";
    case SMX_CHANNEL_ERR_UNINITIALISED: return "port not available";
    case SMX_CHANNEL_ERR_TIMEOUT: return "timeout";
    case SMX_CHANNEL_ERR_CV: return "wait failed";
    case SMX_CHANNEL_ERR_OPEN: return "port not connected";
    case SMX_CHANNEL_ERR_BAD_IDX: return "bad index";
    }
    return "unknown error";
}

/* The payload view of a message: msg->unpack(msg->data). NULL for NULL. */
static inline void *smx_msg_unpack(smx_msg_t *msg)
{
    if (msg == NULL)
        return NULL;
    return msg->unpack != NULL ? msg->unpack(msg->data) : msg->data;
}

/* Sets the message's prevent_backup flag (kept for source compatibility; smx ignores it). */
static inline void smx_msg_prevent_backup(smx_msg_t *msg)
{
    if (msg != NULL)
        msg->prevent_backup = true;
}

/* printf-style logging: formats (only when the level is enabled) and calls smx_log_text. */
static inline void smx_logf(void *h, int level, const char *fmt, ...) SMX_ABI_PRINTF(3, 4);
static inline void smx_logf(void *h, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    if (fmt == NULL || !smx_log_enabled(h, level))
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
    {
        char *long_line = (char *)malloc((size_t)n + 1);
        if (long_line != NULL)
        {
            va_start(ap, fmt);
            vsnprintf(long_line, (size_t)n + 1, fmt, ap);
            va_end(ap);
            smx_log_text(h, level, long_line);
            free(long_line);
            return;
        }
    }
    smx_log_text(h, level, line);
}

#ifdef __cplusplus
}
#endif

#endif /* SMX_ABI_H */
