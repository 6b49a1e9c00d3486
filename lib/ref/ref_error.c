/* libsive-ref's sivei_vfail: format the message, then hand it to libsive's
 * one per-thread last error through the public sive_set_errmsg(), so that
 * sive_last_errmsg() reports the reference stack's errors too
 * (docs/architecture.md).  Same contract as core/error.c's. */
#include "internal.h"

#include <stdio.h>

int sivei_vfail(char *buf, int status, const char *fmt, va_list ap)
{
    char msg[SIVE_ERRMSG_LEN];
    vsnprintf(msg, sizeof msg, fmt, ap);
    sive_set_errmsg(msg);
    if (buf)
        snprintf(buf, SIVE_ERRMSG_LEN, "%s", msg);
    return status;
}
