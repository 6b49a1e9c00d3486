/* Argument parsing and printing helpers for the `sive` program. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "sive: %s expects an integer in [%lld, %lld], got '%s'\n", opt,
                (long long)lo, (long long)hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !end || *end || end == s || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "sive: %s expects a number in [%g, %g], got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_format(const char *s, int *out)
{
    if (!strcmp(s, "table"))
        *out = FMT_TABLE;
    else if (!strcmp(s, "json"))
        *out = FMT_JSON;
    else if (!strcmp(s, "csv"))
        *out = FMT_CSV;
    else {
        fprintf(stderr, "sive: --format expects table, json or csv, got '%s'\n", s);
        return -1;
    }
    return 0;
}

void cli_pm(FILE *f, double mean, double sd, int width)
{
    char buf[64];
    if (isnan(sd))
        snprintf(buf, sizeof buf, "%.4f", mean);
    else
        snprintf(buf, sizeof buf, "%.4f ± %.4f", mean, sd);
    /* "±" is two bytes but one column */
    fprintf(f, "%-*s", width + (strstr(buf, "±") ? 1 : 0), buf);
}
