/*
 * smx.h - smx's own C API for boxes, for new code in C or C++.
 *
 * The same capabilities as smxrts.h, as plain functions that take the box handle and port
 * indices, so no generated header and no macro that needs the box name is required.
 *
 * A BOX is three functions with C linkage, found by name in the library given to
 * `smxrun ... --boxes LIB.so` (NAME is the implementation name written after `box` in the net):
 *
 *     int  NAME_init(void *h, void **state);   set *state; return 0, or non-zero to fail the net
 *     int  NAME(void *h, void *state);         one iteration; returns SMX_NET_RETURN, _CONTINUE
 *                                              or _END
 *     void NAME_cleanup(void *h, void *state); release the state (called also after a failed
 *                                              init; state may be NULL)
 *
 * The runtime calls NAME once per iteration after the FIRING RULE holds: every connected coupled
 * input has a message or has ended. Decoupled inputs are never
 * waited for (unless smx_block_next_read asked so). The handle `h` is valid only in the net's
 * thread, from NAME_init until NAME_cleanup returns.
 *
 * PORTS are numbered separately for inputs and outputs, from 0, in the order the net declares
 * them: for `Add = box c_add( in value, decoupled in offset, out value )` input 0 is `value`,
 * input 1 `offset`, output 0 `value`. Look indices up once in NAME_init with smx_in_index() /
 * smx_out_index() (they use the implementation port name, i.e. `x` for a port declared `y(x)`).
 *
 *     smx_msg_t *m = smx_read(h, in);          next message or NULL (see smx_read_error)
 *     smx_msg_t *m = smx_read_blocking(h, in); wait for a new message (NULL: ended / timeout)
 *     int rc = smx_write(h, out, m);           0, or -1 (message refused); m is gone either way
 *
 * MESSAGES (smx_msg_t, see smx_abi.h): a message owns its payload `data` of `size` bytes and
 * carries the functions that copy, free and unpack it. Ownership:
 *   - smx_msg_create / smx_msg_copy / smx_read* give the caller a message it owns;
 *   - the owner either passes it on with smx_write (always consumed, also when -1 is returned)
 *     or frees it with smx_msg_destroy(h, m, 1); never with free();
 *   - the runtime copies with m->copy where one message must reach several readers (fan-out,
 *     the latest value of a decoupled input read again), and frees with m->destroy whatever it
 *     drops (writes to an ended consumer, overwritten messages, leftovers at the end).
 * smx_msg_new() below builds a message holding a private copy of some bytes.
 *
 * CONFIGURATION: the net's keys from the config layers (`[impl.NAME]`, `[net.INSTANCE]`,
 * `--set INSTANCE.key=value`), looked up with smx_conf_*() below by key, as written.
 *
 * LOGGING: smx_logf(h, SMX_LOG_INFO, "read %d values", n) logs under the net's category
 * (`net_INSTANCE_ID`) into smx's log; levels SMX_LOG_DEBUG .. SMX_LOG_FATAL.
 *
 * ERRORS a box can return are contained: a non-zero init result stops the run before any box
 * runs (every box that was initialised is cleaned up; exit status 1), a negative result of NAME
 * fails that net while its neighbours end cleanly (exit status 2), and `smxrun` reports which.
 * A crash (bad pointer, abort) takes the whole process down: the runtime cannot contain it.
 */
#ifndef SMX_H
#define SMX_H

#include <string.h>

#include "smx_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declares the three entry points of box NAME with C linkage (also from C++), e.g.
 * `SMX_BOX(n_scale);` before their definitions. */
#ifdef __cplusplus
#define SMX_BOX_EXTERN extern "C"
#else
#define SMX_BOX_EXTERN extern
#endif
#define SMX_BOX(name)                                                                         \
    SMX_BOX_EXTERN int name##_init(void *h, void **state);                                    \
    SMX_BOX_EXTERN int name(void *h, void *state);                                            \
    SMX_BOX_EXTERN void name##_cleanup(void *h, void *state)

/* A message holding a malloc'd copy of `size` bytes at `bytes` (default copy/destroy/unpack). */
static inline smx_msg_t *smx_msg_new(void *h, const void *bytes, size_t size)
{
    void *data = malloc(size > 0 ? size : 1);
    smx_msg_t *msg;
    if (data == NULL)
        return NULL;
    if (size > 0)
        memcpy(data, bytes, size);
    msg = smx_msg_create(h, data, size, NULL, NULL, NULL);
    if (msg == NULL)
        free(data);
    return msg;
}

/* Configuration values of this net: the value, or `fallback` when the key is not set. A key set
 * with the wrong type also gives `fallback`; use the *_get forms to tell the cases apart. */
static inline int smx_conf_int(void *h, const char *key, int fallback)
{
    smx_config_error_t err;
    int v = smx_config_get_int_err(smx_net_conf(h), key, &err);
    return err == SMX_CONFIG_ERROR_NO_ERROR ? v : fallback;
}

static inline bool smx_conf_bool(void *h, const char *key, bool fallback)
{
    smx_config_error_t err;
    bool v = smx_config_get_bool_err(smx_net_conf(h), key, &err);
    return err == SMX_CONFIG_ERROR_NO_ERROR ? v : fallback;
}

static inline double smx_conf_double(void *h, const char *key, double fallback)
{
    smx_config_error_t err;
    double v = smx_config_get_double_err(smx_net_conf(h), key, &err);
    return err == SMX_CONFIG_ERROR_NO_ERROR ? v : fallback;
}

static inline const char *smx_conf_string(void *h, const char *key, const char *fallback)
{
    smx_config_error_t err;
    const char *v = smx_config_get_string_err(smx_net_conf(h), key, NULL, &err);
    return err == SMX_CONFIG_ERROR_NO_ERROR ? v : fallback;
}

/* The same, reporting: store the value in *out and return SMX_CONFIG_ERROR_NO_ERROR, or leave
 * *out alone and return SMX_CONFIG_ERROR_NO_VALUE / SMX_CONFIG_ERROR_BAD_TYPE. */
static inline smx_config_error_t smx_conf_get_int(void *h, const char *key, int *out)
{
    smx_config_error_t err;
    int v = smx_config_get_int_err(smx_net_conf(h), key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        *out = v;
    return err;
}

static inline smx_config_error_t smx_conf_get_bool(void *h, const char *key, bool *out)
{
    smx_config_error_t err;
    bool v = smx_config_get_bool_err(smx_net_conf(h), key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        *out = v;
    return err;
}

static inline smx_config_error_t smx_conf_get_double(void *h, const char *key, double *out)
{
    smx_config_error_t err;
    double v = smx_config_get_double_err(smx_net_conf(h), key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        *out = v;
    return err;
}

static inline smx_config_error_t smx_conf_get_string(void *h, const char *key, const char **out)
{
    smx_config_error_t err;
    const char *v = smx_config_get_string_err(smx_net_conf(h), key, NULL, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        *out = v;
    return err;
}

#ifdef __cplusplus
}
#endif

#endif /* SMX_H */
