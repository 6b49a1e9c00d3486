/* Argument parsing and printing helpers for the `sive` program. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

int cli_hidden(const char *s, int64_t *h1, int64_t *h2)
{
    const char *comma = strchr(s, ',');
    char a[32], b[32];
    size_t la = comma ? (size_t)(comma - s) : 0;
    if (!comma || la == 0 || la >= sizeof a || strlen(comma + 1) >= sizeof b) {
        fprintf(stderr, "sive: --hidden expects two widths like 128,128, got '%s'\n", s);
        return -1;
    }
    memcpy(a, s, la);
    a[la] = '\0';
    snprintf(b, sizeof b, "%s", comma + 1);
    if (cli_int("--hidden", a, 1, 1 << 16, h1) || cli_int("--hidden", b, 1, 1 << 16, h2))
        return -1;
    return 0;
}

void cli_json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f); /* UTF-8 passes through */
    }
    fputc('"', f);
}

void cli_json_lines(FILE *f, const char *s)
{
    fputc('[', f);
    for (int first = 1; s && *s;) {
        size_t len = strcspn(s, "\n");
        if (len) {
            char line[1024];
            snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), s);
            fputs(first ? "" : ",", f);
            cli_json_str(f, line);
            first = 0;
        }
        s += len + (s[len] == '\n');
    }
    fputc(']', f);
}

void cli_csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

struct option *cli_opts_cat(struct option *dst, size_t cap, const struct option *a,
                            const struct option *b)
{
    size_t n = 0;
    for (const struct option *src[2] = {a, b}, **s = src; s < src + 2; s++)
        for (const struct option *o = *s; o && o->name && n + 1 < cap; o++)
            dst[n++] = *o;
    memset(&dst[n], 0, sizeof dst[n]);
    return dst;
}

int cli_mkdirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        fprintf(stderr, "sive: path too long (%zu bytes): %.60s...\n", strlen(path), path);
        return -1;
    }
    /* create every prefix ending at a '/', then the whole path */
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "sive: cannot create directory %s: %s\n", buf, strerror(errno));
            return -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "sive: %s is not a directory\n", path);
        return -1;
    }
    return 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void cli_mean_std(const double *x, size_t n, double *mean, double *std)
{
    double s = 0.0, q = 0.0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) {
            s += x[i];
            k++;
        }
    *mean = k ? s / (double)k : NAN;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]))
            q += (x[i] - *mean) * (x[i] - *mean);
    *std = k > 1 ? sqrt(q / (double)(k - 1)) : NAN;
}

/* A directory that holds the bundled subset. */
static int has_subset(const char *dir)
{
    char f[4200];
    snprintf(f, sizeof f, "%s/mnist-10k-images-idx3-ubyte.zst", dir);
    return access(f, R_OK) == 0;
}

const char *cli_data_dir(void)
{
    static char buf[4096];
    const char *env = getenv("SIVE_DATA_DIR");
    if (env && *env)
        return env;
#ifdef SIVE_INSTALL_DATA_DIR
    if (has_subset(SIVE_INSTALL_DATA_DIR))
        return SIVE_INSTALL_DATA_DIR;
#endif
    /* a relocated install: <prefix>/bin/sive and <prefix>/share/libsive */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(buf, sizeof buf, "%.4000s/../share/libsive", exe) < (int)sizeof buf &&
                has_subset(buf))
                return buf;
        }
    }
#ifdef SIVE_SOURCE_DATA_DIR
    return SIVE_SOURCE_DATA_DIR;
#else
    return "data";
#endif
}

int cli_open_data(const char *prefix, const char *dir, sive_dataset **train,
                  sive_dataset **test, int quiet)
{
    if (!dir)
        dir = cli_data_dir();
    int rc = sive_dataset_open_dir(dir, train, test);
    if (rc) {
        fprintf(stderr, "%s: cannot open the data: %s (%s)\n"
                        "  (directory %s; pass --data DIR or set SIVE_DATA_DIR)\n",
                prefix, sive_last_errmsg(), sive_strerror(rc), dir);
        return rc;
    }
    if (!quiet)
        fprintf(stderr, "%s: data %s: %zu training, %zu test images of %zux%zu\n", prefix,
                dir, sive_dataset_count(*train), sive_dataset_count(*test),
                sive_dataset_rows(*train), sive_dataset_cols(*train));
    return SIVE_OK;
}
