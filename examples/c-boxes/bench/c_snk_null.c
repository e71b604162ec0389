/*
 * c_snk_null.c - the C twin of the built-in smx_snk_null, for `benches/c_boxes.rs`: takes every
 * message, keeps the books (received, sequence gaps, out of order) and destroys it.
 *
 * Signature: box c_snk_null( in data )
 */

#include <stdio.h>
#include <stdlib.h>
#include "smx.h"

SMX_BOX(c_snk_null);

struct snk
{
    unsigned long long received, expected, gaps, out_of_order;
};

int c_snk_null_init(void *h, void **state)
{
    (void)h;
    *state = calloc(1, sizeof(struct snk));
    return *state == NULL ? -1 : 0;
}

int c_snk_null(void *h, void *state)
{
    struct snk *s = (struct snk *)state;
    smx_msg_t *msg = smx_read(h, 0);
    if (msg == NULL)
        return SMX_NET_RETURN;
    s->received++;
    if (msg->seq >= s->expected)
    {
        s->gaps += msg->seq - s->expected;
        s->expected = msg->seq + 1;
    }
    else
        s->out_of_order++;
    smx_msg_destroy(h, msg, 1);
    return SMX_NET_RETURN;
}

void c_snk_null_cleanup(void *h, void *state)
{
    struct snk *s = (struct snk *)state;
    if (s == NULL)
        return;
    smx_logf(h, SMX_LOG_NOTICE, "received %llu, gaps %llu, out of order %llu", s->received, s->gaps,
            s->out_of_order);
    free(s);
}
