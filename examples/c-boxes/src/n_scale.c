/*
 * n_scale.c - a box written against smx's own C API (smx.h): no generated header, ports looked
 * up by name once in init.
 *
 * Multiplies every value by `factor`.
 *
 * Signature: box n_scale( in value, out value )   (payload: one `long long`)
 * Configuration: factor (int, default 1)
 */

#include <stdlib.h>
#include "smx.h"

SMX_BOX(n_scale);

struct n_scale_state
{
    int in;          /* index of input `value` */
    int out;         /* index of output `value` */
    long long factor;
    unsigned long count;
};

int n_scale_init(void *h, void **state)
{
    struct n_scale_state *s;
    int factor = 1;

    if (smx_conf_get_int(h, "factor", &factor) == SMX_CONFIG_ERROR_BAD_TYPE)
    {
        smx_logf(h, SMX_LOG_ERROR, "config key 'factor' must be an integer");
        return -1;
    }
    s = (struct n_scale_state *)calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    *state = s;
    s->factor = factor;
    s->in = smx_in_index(h, "value");
    s->out = smx_out_index(h, "value");
    if (s->in < 0 || s->out < 0)
    {
        smx_logf(h, SMX_LOG_ERROR, "%s needs ports 'in value' and 'out value'", smx_net_impl(h));
        return -1;
    }
    return 0;
}

int n_scale(void *h, void *state)
{
    struct n_scale_state *s = (struct n_scale_state *)state;
    smx_msg_t *msg = smx_read(h, s->in);

    if (msg == NULL)
        return SMX_NET_RETURN; /* ended: the runtime ends the net once the input is drained */
    if (msg->size == (int)sizeof(long long))
        *(long long *)msg->data *= s->factor;
    s->count++;
    if (smx_write(h, s->out, msg) != 0)
        return SMX_NET_END; /* consumer gone; the message was destroyed by the runtime */
    return SMX_NET_RETURN;
}

void n_scale_cleanup(void *h, void *state)
{
    struct n_scale_state *s = (struct n_scale_state *)state;
    if (s == NULL)
        return;
    smx_logf(h, SMX_LOG_INFO, "%s (%s #%u) scaled %lu values by %lld", smx_net_name(h),
            smx_net_impl(h), smx_net_id(h), s->count, s->factor);
    free(s);
}
