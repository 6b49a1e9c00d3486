/* Status texts, per-thread last error, version queries. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

static _Thread_local char last_error[SIVE_ERRMSG_LEN];

const char *sive_strerror(int status)
{
    switch (status) {
    case SIVE_OK: return "success";
    case SIVE_E_INVALID_ARG: return "invalid argument";
    case SIVE_E_NOMEM: return "out of memory";
    case SIVE_E_STATE: return "operation not valid in the current state";
    case SIVE_E_CALLBACK: return "a user callback returned an error";
    case SIVE_E_DIVERGED: return "every chain diverged";
    case SIVE_E_CANCELLED: return "cancelled by the progress callback";
    case SIVE_E_IO: return "input/output error";
    case SIVE_E_FORMAT: return "malformed, truncated or corrupted file";
    case SIVE_E_THREAD: return "could not start a worker thread";
    case SIVE_E_UNSUPPORTED: return "feature not available in this build";
    default: return "unknown status code";
    }
}

const char *sive_last_errmsg(void) { return last_error; }

void sivei_clear_error(void) { last_error[0] = '\0'; }

int sivei_vfail(char *buf, int status, const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    if (buf && buf != last_error)
        snprintf(buf, SIVE_ERRMSG_LEN, "%s", last_error);
    return status;
}

uint32_t sive_version_number(void) { return SIVE_VERSION_NUMBER; }

const char *sive_version_string(void) { return SIVE_VERSION_STRING; }

void sive_set_errmsg(const char *msg)
{
    snprintf(last_error, sizeof last_error, "%s", msg ? msg : "");
}

void sive_free(void *ptr) { free(ptr); }
