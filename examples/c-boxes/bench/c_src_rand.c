/*
 * c_src_rand.c - the C twin of the built-in smx_src_rand, for `benches/c_boxes.rs`: sends `count`
 * messages of `size` pseudo-random bytes (splitmix64, the same generator), then ends. Every
 * message is a malloc'd payload in a runtime-created smx_msg_t, as a box of the original style
 * makes it.
 *
 * Signature: box c_src_rand( out data )
 * Configuration: count (default 100000; 0: until stopped), size (default 8), seed (default 1)
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "smx.h"

SMX_BOX(c_src_rand);

struct src
{
    unsigned long long count, sent;
    uint64_t state;
    size_t size;
};

static uint64_t next(struct src *s)
{
    uint64_t z = (s->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int c_src_rand_init(void *h, void **state)
{
    struct src *s = (struct src *)calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    *state = s;
    s->count = (unsigned long long)smx_conf_int(h, "count", 100000);
    s->size = (size_t)smx_conf_int(h, "size", 8);
    s->state = (uint64_t)smx_conf_int(h, "seed", 1);
    return 0;
}

int c_src_rand(void *h, void *state)
{
    struct src *s = (struct src *)state;
    unsigned char *data;
    smx_msg_t *msg;
    size_t i;

    if (smx_net_stop_requested(h))
        return SMX_NET_END;
    data = (unsigned char *)malloc(s->size > 0 ? s->size : 1);
    if (data == NULL)
        return -1;
    for (i = 0; i < s->size; i += 8)
    {
        uint64_t r = next(s);
        memcpy(data + i, &r, s->size - i < 8 ? s->size - i : 8);
    }
    msg = smx_msg_create(h, data, s->size, NULL, NULL, NULL);
    if (msg == NULL)
    {
        free(data);
        return -1;
    }
    smx_write(h, 0, msg);
    s->sent++;
    return s->count != 0 && s->sent >= s->count ? SMX_NET_END : SMX_NET_RETURN;
}

void c_src_rand_cleanup(void *h, void *state)
{
    (void)h;
    free(state);
}
