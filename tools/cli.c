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

const char *cli_cmd = "sive";

void cli_set_cmd(const char *name)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "sive %s", name);
    cli_cmd = buf;
}

/* The element of argv that named the option getopt_long() just returned
 * (optind is past it, and past its value when that was a separate word). */
static const char *opt_word(char **argv, int has_value)
{
    return has_value && optarg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
}

/* "unknown option '--step'", with the full names it abbreviates, if any
 * (getopt_long refuses an ambiguous prefix before we can see it). */
static void unknown_option(const char *w, const struct option *opts)
{
    int len = (int)strcspn(w, "=");
    char names[256] = "";
    size_t at = 0;
    for (const struct option *o = opts; o->name && !strncmp(w, "--", 2); o++)
        if (len > 2 && !strncmp(o->name, w + 2, (size_t)len - 2) && at < sizeof names)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s--%s", at ? ", " : "",
                                   o->name);
    int has_help = 0, has_h = 0;
    for (const struct option *o = opts; o->name; o++) {
        has_help |= !strcmp(o->name, "help");
        has_h |= !strcmp(o->name, "h");
    }
    if (at)
        fprintf(stderr, "%s: unknown option '%.*s' (options are not abbreviated: %s?)\n",
                cli_cmd, len, w, names);
    else if (!strcmp(w, "-h") && has_help) /* no short options: say which is meant */
        fprintf(stderr, "%s: unknown option '-h' (--help lists the options%s)\n", cli_cmd,
                has_h ? "; --h X is the radius" : "");
    else
        fprintf(stderr, "%s: unknown option '%.*s'\n", cli_cmd, len, w);
}

int cli_getopt(int argc, char **argv, const struct option *opts)
{
    int idx = -1;
    opterr = 0; /* the messages are ours, with the command's prefix */
    int o = getopt_long(argc, argv, ":", opts, &idx);
    if (o == -1)
        return -1;
    if (o == ':') {
        fprintf(stderr, "%s: option '%s' needs a value\n", cli_cmd, argv[optind - 1]);
        return '?';
    }
    if (o == '?' || idx < 0) {
        const char *w = argv[optind - 1];
        unknown_option(w, opts);
        return '?';
    }
    const char *w = opt_word(argv, opts[idx].has_arg != no_argument);
    size_t len = strcspn(w + 2, "=");
    if (strncmp(w, "--", 2) || len != strlen(opts[idx].name)) {
        fprintf(stderr, "%s: unknown option '%.*s' (options are not abbreviated: --%s?)\n",
                cli_cmd, (int)(len + 2), w, opts[idx].name);
        return '?';
    }
    return o;
}

int cli_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "%s: %s expects an integer in [%lld, %lld], got '%s'\n", cli_cmd, opt,
                (long long)lo, (long long)hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_seed(const char *opt, const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s < '0' || *s > '9' || errno || !end || *end) { /* strtoull takes a sign */
        fprintf(stderr, "%s: %s expects an integer in [0, %llu], got '%s'\n", cli_cmd, opt,
                (unsigned long long)UINT64_MAX, s);
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
        fprintf(stderr, "%s: %s expects a number in [%g, %g], got '%s'\n", cli_cmd, opt, lo,
                hi, s);
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
        fprintf(stderr, "%s: --format expects table, json or csv, got '%s'\n", cli_cmd, s);
        return -1;
    }
    return 0;
}

void cli_pm(FILE *f, double mean, double sd, int width)
{
    char buf[96];
    cli_cell(f, cli_round_pm(buf, sizeof buf, mean, sd, 1), width);
}

char *cli_flag_names(char *buf, size_t len, uint32_t flags)
{
    size_t n = 0;
    if (len)
        buf[0] = '\0';
    for (int b = 0; b < 32 && n < len; b++) {
        const char *name = (flags >> b & 1u) ? sive_flag_name(1u << b) : NULL;
        if (name)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "", name);
    }
    return buf;
}

void cli_flags_legend(FILE *f, uint32_t flags, const char *indent)
{
    for (int b = 0; b < 32; b++) {
        const char *name = (flags >> b & 1u) ? sive_flag_name(1u << b) : NULL;
        if (name)
            fprintf(f, "%s%s: %s\n", indent, name, sive_flag_string(1u << b));
    }
}

int cli_chain_note(char *buf, size_t len, const sive_result *r, int32_t k)
{
    int64_t step = 0;
    sive_chain_status s = sive_result_chain_status(r, k, &step);
    if (s == SIVE_CHAIN_OK || s == SIVE_CHAIN_INVALID)
        return 0;
    int n = snprintf(buf, len, "%s at step %lld of %lld", sive_chain_status_string(s),
                     (long long)step, (long long)sive_result_steps(r));
    double lam = sive_result_stat(r, SIVE_STAT_SIVE, k), mcse = sive_result_stat(r, SIVE_STAT_MCSE, k);
    char a[96], b[96];
    if (isfinite(lam) && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ": lambda-hat %s, MCSE %s, ESS %.0f, from the steps it ran",
                 cli_round_pm(a, sizeof a, lam, mcse, 0), cli_round_pm(b, sizeof b, mcse, mcse, 0),
                 sive_result_stat(r, SIVE_STAT_ESS, k));
    return 1;
}

void cli_print_lines(FILE *f, const char *text, const char *prefix)
{
    while (text && *text) {
        size_t len = strcspn(text, "\n");
        if (len)
            fprintf(f, "%s%.*s\n", prefix, (int)len, text);
        text += len + (text[len] == '\n');
    }
}

int cli_hidden(const char *s, int64_t *h1, int64_t *h2)
{
    const char *comma = strchr(s, ',');
    char a[32], b[32];
    size_t la = comma ? (size_t)(comma - s) : 0;
    if (!comma || la == 0 || la >= sizeof a || strlen(comma + 1) >= sizeof b) {
        fprintf(stderr, "%s: --hidden expects two widths like 128,128, got '%s'\n", cli_cmd, s);
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

/* s as a JSON string that is valid for any bytes (a path may hold any):
 * '"' and '\\' escaped, '\n' as \n, the other control characters as
 * \u00XX, well-formed UTF-8 copied as is (Unicode's table 3-7: no overlong
 * form, surrogate or code point above U+10FFFF), and every other byte -
 * each byte of an invalid, overlong or truncated sequence, one by one -
 * replaced by \ufffd.  The output always parses; the replaced bytes are
 * not recoverable from it (docs/reliability.md). */
void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        if (c < 0x80) {
            if (c == '"' || c == '\\')
                fprintf(f, "\\%c", (int)c);
            else if (c == '\n')
                fputs("\\n", f);
            else if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc((int)c, f);
            p++;
            continue;
        }
        /* sequence length, and the range of its second byte (table 3-7) */
        int n = 0;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80; /* overlong */
            hi = c == 0xED ? 0x9F : 0xBF; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            lo = c == 0xF0 ? 0x90 : 0x80; /* overlong */
            hi = c == 0xF4 ? 0x8F : 0xBF; /* above U+10FFFF */
        }
        /* stops at the terminating NUL, which is never in range */
        int ok = n > 0 && p[1] >= lo && p[1] <= hi;
        for (int i = 2; ok && i < n; i++)
            ok = p[i] >= 0x80 && p[i] <= 0xBF;
        if (ok) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        } else {
            fputs("\\ufffd", f);
            p++;
        }
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

int cli_out_check(const char *path)
{
    cli_out *o = NULL;
    if (!cli_out_open(&o, cli_cmd, path))
        return -1;
    cli_out_abort(o);
    return 0;
}

int cli_in_check(const char *path)
{
    struct stat st;
    const char *why = NULL;
    if (stat(path, &st) != 0)
        why = errno == ENOENT ? "file not found" : strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "is a directory, not a file";
    else if (access(path, R_OK) != 0)
        why = strerror(errno);
    if (why)
        fprintf(stderr, "%s: %s: %s\n", cli_cmd, path, why);
    return why ? -1 : 0;
}

int cli_mkdirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        fprintf(stderr, "%s: path too long (%zu bytes): %.60s...\n", cli_cmd, strlen(path),
                path);
        return -1;
    }
    /* create every prefix ending at a '/', then the whole path */
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "%s: cannot create directory %s: %s\n", cli_cmd, buf,
                    strerror(errno));
            return -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s is not a directory\n", cli_cmd, path);
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

int cli_same_terminal(void)
{
    struct stat out, err;
    if (!isatty(STDOUT_FILENO) || !isatty(STDERR_FILENO) || fstat(STDOUT_FILENO, &out) ||
        fstat(STDERR_FILENO, &err))
        return 0;
    /* one device however each was opened (2>/dev/pts/N beside a pts stdout) */
    return S_ISCHR(out.st_mode) && S_ISCHR(err.st_mode) && out.st_rdev == err.st_rdev;
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
        struct stat st; /* a missing directory is said so, not "input/output error" */
        int missing = rc == SIVE_E_IO && stat(dir, &st) != 0 && errno == ENOENT;
        fprintf(stderr, "%s: cannot open the data: %s (%s)\n"
                        "  (directory %s; pass --data DIR or set SIVE_DATA_DIR)\n",
                prefix, sive_last_errmsg(), missing ? "directory not found" : sive_strerror(rc),
                dir);
        return rc;
    }
    if (!quiet)
        fprintf(stderr, "%s: data %s: %zu training, %zu test images of %zux%zu\n", prefix,
                dir, sive_dataset_count(*train), sive_dataset_count(*test),
                sive_dataset_rows(*train), sive_dataset_cols(*train));
    return SIVE_OK;
}

/* ------------------------------------------------------------------ */
/* Probe options: the library's table is the one source of their flags, */
/* bounds, defaults, parsing and --help lines                          */
/* ------------------------------------------------------------------ */

static int in_list(const char *name, const char *const *list)
{
    for (; list && *list; list++)
        if (!strcmp(name, *list))
            return 1;
    return 0;
}

static int wanted(const sive_option_info *in, const cli_optset *set)
{
    if (!set)
        return 1;
    return (!set->only || in_list(in->name, set->only)) && !in_list(in->name, set->skip);
}

const char *cli_opt_flag(const sive_option_info *in)
{
    /* built once per option; getopt keeps pointers to them (a table of
     * more than 64 options would need more room: the name is then used) */
    static char flags[64][32];
    for (size_t i = 0; i < 64; i++) {
        const sive_option_info *at = sive_option_at(i);
        if (!at)
            break;
        if (at != in)
            continue;
        if (!flags[i][0]) {
            snprintf(flags[i], sizeof flags[i], "%s", in->name);
            for (char *c = flags[i]; *c; c++)
                if (*c == '_')
                    *c = '-';
        }
        return flags[i];
    }
    return in->name;
}

struct option *cli_opts_add(struct option *dst, size_t cap, const cli_optset *set)
{
    size_t n = 0;
    while (n < cap && dst[n].name)
        n++;
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)) && n + 1 < cap; i++)
        if (wanted(in, set))
            dst[n++] = (struct option){cli_opt_flag(in), required_argument, 0,
                                       CLI_OPT_CODE + (int)i};
    memset(&dst[n], 0, sizeof *dst);
    return dst;
}

int cli_opt_apply(sive_probe *p, int code, const char *arg)
{
    const sive_option_info *in = code >= CLI_OPT_CODE
                                     ? sive_option_at((size_t)(code - CLI_OPT_CODE))
                                     : NULL;
    if (!in)
        return 0;
    if (sive_probe_set_text(p, in->name, arg)) {
        fprintf(stderr, "%s: --%s: %s\n", cli_cmd, cli_opt_flag(in), sive_probe_errmsg(p));
        return -1;
    }
    return 1;
}

void cli_wrap_start(cli_wrap *w, FILE *f, const char *cmd)
{
    w->f = f;
    w->col = fprintf(f, "usage: %s", cmd);
    w->indent = w->col + 1;
}

void cli_wrap_word(cli_wrap *w, const char *word)
{
    int len = (int)cli_width(word);
    if (w->col + 1 + len > 79 && w->col > w->indent) {
        fprintf(w->f, "\n%*s", w->indent - 1, "");
        w->col = w->indent - 1;
    }
    w->col += fprintf(w->f, " %s", word) - (int)(strlen(word) - (size_t)len);
}

void cli_wrap_words(cli_wrap *w, const char *const *words)
{
    for (; words && *words; words++)
        cli_wrap_word(w, *words);
}

/* "--name INT" or "--name X". */
static void opt_synopsis(char *buf, size_t len, const sive_option_info *in)
{
    snprintf(buf, len, "--%s %s", cli_opt_flag(in), in->type == SIVE_TYPE_INT ? "INT" : "X");
}

void cli_wrap_opts(cli_wrap *w, const cli_optset *set)
{
    const sive_option_info *in, *h = sive_option_info_get(SIVE_OPT_H),
                                *c_h = sive_option_info_get(SIVE_OPT_C_H);
    int both = h && c_h && wanted(h, set) && wanted(c_h, set);
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        char a[48], b[48], word[100];
        if (!wanted(in, set) || (both && in == c_h))
            continue;
        opt_synopsis(a, sizeof a, in);
        if (both && in == h) {
            opt_synopsis(b, sizeof b, c_h);
            snprintf(word, sizeof word, "[%s | %s]", a, b); /* exclusive */
        } else {
            snprintf(word, sizeof word, "[%s]", a);
        }
        cli_wrap_word(w, word);
    }
}

void cli_wrap_end(cli_wrap *w) { fputc('\n', w->f); }

int64_t cli_opt_int(const sive_probe *p, sive_option opt)
{
    int64_t v = 0;
    sive_probe_get_int(p, opt, &v);
    return v;
}

double cli_opt_double(const sive_probe *p, sive_option opt)
{
    double v = NAN;
    sive_probe_get_double(p, opt, &v);
    return v;
}

/* An option's value held by p, or by the run's result r when given (the
 * values it resolved and ran: sive_result_option_int/_double), as text:
 * %lld or %g (JSON: %.10g, null for NaN); "" for an unset double (NaN)
 * outside JSON. */
static void opt_value(char *buf, size_t len, const sive_probe *p, const sive_result *r,
                      const sive_option_info *in, int json)
{
    if (in->type == SIVE_TYPE_INT) {
        int64_t v = cli_opt_int(p, in->id);
        if (r)
            sive_result_option_int(r, in->id, &v);
        if (in->id == SIVE_OPT_METROPOLIS && v < 0 && !json)
            snprintf(buf, len, "auto"); /* resolved by the run (the health text says) */
        else if (in->id == SIVE_OPT_SEED) /* a uint64_t: as --seed takes it */
            snprintf(buf, len, "%llu", (unsigned long long)(uint64_t)v);
        else
            snprintf(buf, len, "%lld", (long long)v);
        return;
    }
    double v = cli_opt_double(p, in->id);
    if (r)
        sive_result_option_double(r, in->id, &v);
    if (!isfinite(v))
        snprintf(buf, len, "%s", json ? "null" : "");
    else
        snprintf(buf, len, json ? "%.10g" : "%g", v);
}

/* "default 0.05, in (0, 1]"; full 64-bit and infinite ranges are left out. */
static void opt_facts(char *buf, size_t len, const sive_probe *defaults,
                      const sive_option_info *in, const cli_opt_note *notes)
{
    char def[64] = "", range[96] = "";
    for (; notes && notes->name; notes++)
        if (!strcmp(notes->name, in->name))
            snprintf(def, sizeof def, "%s", notes->text);
    if (!def[0])
        opt_value(def, sizeof def, defaults, NULL, in, 0);
    if (in->type == SIVE_TYPE_INT && !(in->int_lo == INT64_MIN && in->int_hi == INT64_MAX))
        snprintf(range, sizeof range, ", in [%lld, %lld]", (long long)in->int_lo,
                 (long long)in->int_hi);
    else if (in->type == SIVE_TYPE_DOUBLE && isfinite(in->double_lo) && isfinite(in->double_hi))
        snprintf(range, sizeof range, ", in %c%g, %g%c", in->lo_open ? '(' : '[', in->double_lo,
                 in->double_hi, in->hi_open ? ')' : ']');
    snprintf(buf, len, "default %s%s%s", def[0] ? def : "none", range,
             in->tier == SIVE_TIER_EXPERIMENTAL ? "; experimental: may change" : "");
}

/* "  --flag X           doc" with doc wrapped at 79 columns under a
 * 22-column hanging indent; a flag wider than its column gets the text on
 * the next line (the library's one-line docs are longer than a line). */
static void opt_doc(FILE *f, const char *flag, const char *doc)
{
    int col = strlen(flag) <= 19 ? fprintf(f, "  %-19s ", flag)
                                 : fprintf(f, "  %s\n%22s", flag, "") - (int)strlen(flag) - 3;
    for (int first = 1; *doc; first = 0) {
        const int n = (int)strcspn(doc, " ");
        if (!first && col + 1 + n > 79)
            col = fprintf(f, "\n%22s", "") - 1;
        else if (!first)
            col += fprintf(f, " ");
        col += fprintf(f, "%.*s", n, doc);
        doc += n;
        doc += strspn(doc, " ");
    }
    fputc('\n', f);
}

void cli_opts_usage(FILE *f, const sive_probe *defaults, const cli_optset *set,
                    const cli_opt_note *notes)
{
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        if (!wanted(in, set))
            continue;
        char flag[48], facts[200];
        snprintf(flag, sizeof flag, "--%s %s", cli_opt_flag(in),
                 in->type == SIVE_TYPE_INT ? "INT" : "X");
        opt_facts(facts, sizeof facts, defaults, in, notes);
        opt_doc(f, flag, in->doc);
        fprintf(f, "%22s(%s)\n", "", facts);
    }
}

void cli_opts_print(FILE *f, const sive_probe *p, const cli_optset *set, int json)
{
    cli_opts_print_run(f, p, NULL, set, 0, json);
}

void cli_opts_print_run(FILE *f, const sive_probe *p, const sive_result *r,
                        const cli_optset *set, int radius_auto, int json)
{
    const sive_option_info *in;
    int first = 1;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        char v[64];
        opt_value(v, sizeof v, p, r, in, json);
        if (!r && radius_auto && !json && in->id == SIVE_OPT_C_H)
            snprintf(v, sizeof v, "auto (from the loss or 1, resolved at the start)");
        /* in text, the chain range only when a part of the chains was
         * asked for: the settings line of whole runs reads as before */
        int range = in->id == SIVE_OPT_CHAIN_BEGIN || in->id == SIVE_OPT_CHAIN_END;
        if (!wanted(in, set) || !v[0] || (range && !json && !strcmp(v, "0")))
            continue;
        if (json)
            fprintf(f, "%s\"%s\":%s", first ? "" : ",", in->name, v);
        else
            fprintf(f, "%s%s = %s", first ? "" : ", ", in->name, v);
        first = 0;
    }
}

const char *cli_key_name(cli_key k)
{
    switch (k) {
    case CLI_KEY_ONLINE: return "online";
    case CLI_KEY_RETROSPECTIVE: return "retrospective";
    case CLI_KEY_ORACLE: return "oracle";
    case CLI_KEY_ORACLE_VARIANCE: return "oracle_variance";
    case CLI_KEY_ORACLE_MCSE: return "oracle_mcse";
    case CLI_KEY_NOISE_CORRECTION_THEORY: return "noise_correction_theory";
    }
    return "?";
}

int cli_stat_count(void)
{
    int n = 0;
    while (sive_stat_at((size_t)n))
        n++;
    return n;
}

int cli_stat_pooled(sive_stat s)
{
    const sive_stat_info *in = sive_stat_info_get(s);
    return in && in->scalar;
}

int cli_stat_summary_only(sive_stat s)
{
    const sive_stat_info *in = sive_stat_info_get(s);
    return in && in->pool == SIVE_POOL_SUMMARY_ONLY;
}

void cli_json_member(FILE *f, const char *key, double v)
{
    fprintf(f, ",\"%s\":", key);
    cli_json_num(f, v);
}

void cli_json_flags(FILE *f, uint32_t flags)
{
    fputc('[', f);
    const char *sep = "";
    for (int b = 0; b < 32; b++) {
        const char *name = (flags >> b & 1u) ? sive_flag_name(1u << b) : NULL;
        if (name) {
            fprintf(f, "%s\"%s\"", sep, name);
            sep = ",";
        }
    }
    fputc(']', f);
}
