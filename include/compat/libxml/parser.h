/* libxml/parser.h - see libxml/tree.h in this directory (smx's stand-in for XML-era boxes). */
#ifndef SMX_COMPAT_LIBXML_PARSER_H
#define SMX_COMPAT_LIBXML_PARSER_H
#include "tree.h"
#endif /* SMX_COMPAT_LIBXML_PARSER_H */
