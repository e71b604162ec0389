/*
 * libxml/tree.h - stand-in for libxml2, only for box sources of the original runtime's XML era
 * (2019, moiri/streamix examples) that read their configuration with
 *     xmlNodePtr cur = SMX_NET_GET_CONF(h);  xmlChar* v = xmlGetProp(cur, (const xmlChar*)"key");
 *     ... xmlFree(v);
 * Opt in with `-I include/compat` (instead of -I /usr/include/libxml2). xmlGetProp returns the
 * value of `key` in the net's smx configuration as text (as the configuration wrote it), or NULL
 * when the key is not set; the caller frees it with xmlFree. Nothing else of libxml2 is
 * available: a box that walks the XML tree needs porting.
 */
#ifndef SMX_COMPAT_LIBXML_TREE_H
#define SMX_COMPAT_LIBXML_TREE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smx_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef unsigned char xmlChar;
typedef struct _xmlNode xmlNode; /* opaque: an smx configuration handle */
typedef xmlNode *xmlNodePtr;

static inline xmlChar *smx_compat_xml_dup(const char *text)
{
    size_t n = strlen(text);
    xmlChar *copy = (xmlChar *)malloc(n + 1);
    if (copy != NULL)
        memcpy(copy, text, n + 1);
    return copy;
}

static inline xmlChar *xmlGetProp(const xmlNode *node, const xmlChar *name)
{
    void *conf = (void *)node;
    const char *key = (const char *)name;
    smx_config_error_t err;
    char text[64];
    const char *s;
    int i;
    double d;
    bool b;

    if (node == NULL || name == NULL)
        return NULL;
    s = smx_config_get_string_err(conf, key, NULL, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        return s != NULL ? smx_compat_xml_dup(s) : NULL;
    if (err == SMX_CONFIG_ERROR_NO_VALUE)
        return NULL;
    i = smx_config_get_int_err(conf, key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
    {
        snprintf(text, sizeof text, "%d", i);
        return smx_compat_xml_dup(text);
    }
    d = smx_config_get_double_err(conf, key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
    {
        snprintf(text, sizeof text, "%.17g", d);
        return smx_compat_xml_dup(text);
    }
    b = smx_config_get_bool_err(conf, key, &err);
    if (err == SMX_CONFIG_ERROR_NO_ERROR)
        return smx_compat_xml_dup(b ? "1" : "0");
    return NULL;
}

static inline void xmlFree(void *mem)
{
    free(mem);
}

#ifdef __cplusplus
}
#endif

#endif /* SMX_COMPAT_LIBXML_TREE_H */
