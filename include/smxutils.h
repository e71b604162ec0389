/* smxutils.h - the original runtime's utility header, kept for message libraries that include it
 * for smx_malloc. Everything lives in smxrts.h. */
#ifndef SMX_COMPAT_SMXUTILS_H
#define SMX_COMPAT_SMXUTILS_H
#include "smxrts.h"
#endif /* SMX_COMPAT_SMXUTILS_H */
