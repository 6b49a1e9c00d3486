/* sivei_fail: the variadic face of sivei_vfail, which each library defines
 * once (core/error.c for libsive; ref/ref_error.c, through the public
 * sive_set_errmsg(), for libsive-ref). */
#include "internal.h"

int sivei_fail(char *buf, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sivei_vfail(buf, status, fmt, ap);
    va_end(ap);
    return status;
}
