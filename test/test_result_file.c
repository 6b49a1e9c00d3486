/* Chain ranges, sive_result_merge() and result files (issue 10): a split
 * run merges into the whole run bit for bit; parts that do not fit are
 * refused; a saved result loads back identical; every damaged or
 * truncated file is refused. */
#define SIVE_EXPERIMENTAL /* sive_result_bytes_options() */
#include <sive/mlp.h>
#include <sive/sive.h>

#include "check_run.h"
#include "quad.h"
#include "sres_forge.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define D 3

/* K = 1 + 0.5|x|^2 with Gaussian evaluation noise from the call's seed. */
static quad_fixture qf = {.k = 1.0, .l0 = 1.0, .sigma = 0.01};

static const double theta_star[D] = {0.5, -0.25, 1.0};

/* A run of chains [begin, end) of a 4-chain probe (end 0: all); ULA
 * (metropolis 0 set: the quadratic's loss is exact, and this file is
 * about files, not about the default sampler). */
static sive_result *run_range(int64_t begin, int64_t end, uint64_t seed, const double *theta)
{
    sive_model m = quad_fixture_model(&qf, D);
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    const struct { sive_option o; int64_t v; } iv[] = {
        {SIVE_OPT_STEPS, 60}, {SIVE_OPT_GROUPS, 4}, {SIVE_OPT_CHAINS, 4},
        {SIVE_OPT_THREADS, 2}, {SIVE_OPT_SEED, (int64_t)seed},
        {SIVE_OPT_CHAIN_BEGIN, begin}, {SIVE_OPT_CHAIN_END, end}, {SIVE_OPT_METROPOLIS, 0}};
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++)
        ck_assert_int_eq(sive_probe_set_int(p, iv[i].o, iv[i].v), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 10.0), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, &m, theta, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    sive_probe_free(p);
    return r;
}

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Every number, trace, flag and text of a and b agree bit for bit. */
static void assert_same(const sive_result *a, const sive_result *b)
{
    ck_assert_int_eq(sive_result_chains(a), sive_result_chains(b));
    ck_assert_int_eq(sive_result_dtype(a), sive_result_dtype(b));
    ck_assert_int_eq(sive_result_chains_ok(a), sive_result_chains_ok(b));
    ck_assert_int_eq(sive_result_status(a), sive_result_status(b));
    ck_assert_str_eq(sive_result_errmsg(a), sive_result_errmsg(b));
    ck_assert_uint_eq(sive_result_flags(a), sive_result_flags(b));
    ck_assert_str_eq(sive_result_health(a), sive_result_health(b));
    for (int s = 0; sive_stat_name((sive_stat)s); s++) {
        ck_assert(same(sive_result_stat_std(a, (sive_stat)s), sive_result_stat_std(b, (sive_stat)s)));
        for (int32_t c = SIVE_SUMMARY; c < sive_result_chains(a); c++)
            ck_assert_msg(same(sive_result_stat(a, (sive_stat)s, c),
                               sive_result_stat(b, (sive_stat)s, c)),
                          "stat %s chain %d", sive_stat_name((sive_stat)s), (int)c);
    }
    for (int32_t c = 0; c < sive_result_chains(a); c++) {
        ck_assert_int_eq(sive_result_chain_status(a, c, NULL), sive_result_chain_status(b, c, NULL));
        for (int k = 0; sive_trace_name((sive_trace)k); k++) {
            size_t na, nb;
            const double *ta = sive_result_trace(a, (sive_trace)k, c, &na);
            const double *tb = sive_result_trace(b, (sive_trace)k, c, &nb);
            ck_assert_uint_eq(na, nb);
            ck_assert(na == 0 || memcmp(ta, tb, na * sizeof *ta) == 0);
        }
    }
}

/* The ignorable value of an int option: its default, but 0 for the
 * options whose default -1 ("auto") every run resolves. */
static int64_t int_without(const sive_option_info *in)
{
    return in->id == SIVE_OPT_METROPOLIS || in->id == SIVE_OPT_KRON_EVERY ||
                   in->id == SIVE_OPT_RADIUS_LOOKAHEAD || in->id == SIVE_OPT_RADIUS_CHECK
               ? 0
               : in->int_default;
}

START_TEST(split_merge_is_whole)
{
    sive_result *whole = run_range(0, 0, 11, theta_star);
    sive_result *p0 = run_range(0, 1, 11, theta_star), *p1 = run_range(1, 3, 11, theta_star),
                *p2 = run_range(3, 4, 11, theta_star);
    int32_t b, e;
    ck_assert_int_eq(sive_result_chain_range(p1, &b, &e), SIVE_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(e, 3);
    ck_assert_int_eq(sive_result_chain_status(p1, 0, NULL), SIVE_CHAIN_NOT_RUN);
    ck_assert_int_eq(sive_result_chains_ok(p1), 2);
    const sive_result *parts[] = {p2, p0, p1}; /* any order */
    sive_result *m = NULL;
    ck_assert_msg(sive_result_merge(&m, parts, 3) == SIVE_OK, "%s", sive_last_errmsg());
    assert_same(whole, m);
    int64_t v;
    ck_assert_int_eq(sive_result_option_int(m, SIVE_OPT_CHAIN_END, &v), SIVE_OK);
    ck_assert_int_eq(v, 0);
    sive_result_free(m);
    sive_result_free(whole);
    sive_result_free(p0);
    sive_result_free(p1);
    sive_result_free(p2);
}
END_TEST

static void expect_refused(const sive_result *const *parts, size_t n, const char *why)
{
    sive_result *m = (sive_result *)(uintptr_t)1;
    ck_assert_int_eq(sive_result_merge(&m, parts, n), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(sive_last_errmsg(), why), "'%s' lacks '%s'", sive_last_errmsg(), why);
}

START_TEST(merge_refuses_misfits)
{
    const double other_theta[D] = {0.5, -0.25, 1.0 + 1e-15};
    sive_result *a = run_range(0, 2, 11, theta_star), *b = run_range(2, 4, 11, theta_star);
    sive_result *seed = run_range(2, 4, 12, theta_star);
    sive_result *theta = run_range(2, 4, 11, other_theta);
    sive_result *over = run_range(1, 4, 11, theta_star);
    ck_assert_int_eq(sive_probe_run(NULL, NULL, NULL, NULL), SIVE_E_INVALID_ARG);
    expect_refused((const sive_result *[]){a, seed}, 2, "option 'seed'");
    expect_refused((const sive_result *[]){a, theta}, 2, "theta*");
    expect_refused((const sive_result *[]){a, over}, 2, "overlap");
    expect_refused((const sive_result *[]){a}, 1, "chain 2 of 4 is in no part");
    expect_refused((const sive_result *[]){a, b, b}, 3, "overlap");
    expect_refused((const sive_result *[]){a, NULL}, 2, "NULL");
    ck_assert_int_eq(sive_result_merge(NULL, NULL, 0), SIVE_E_INVALID_ARG);
    sive_result *r[] = {a, b, seed, theta, over};
    for (size_t i = 0; i < 5; i++)
        sive_result_free(r[i]);
}
END_TEST

START_TEST(bad_range_is_refused)
{
    sive_model m = quad_fixture_model(&qf, D);
    sive_probe *p = NULL;
    sive_probe_new(&p);
    sive_probe_set_int(p, SIVE_OPT_STEPS, 60);
    sive_probe_set_int(p, SIVE_OPT_CHAINS, 2);
    sive_probe_set_int(p, SIVE_OPT_CHAIN_END, 3);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, theta_star, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "chain range"));
    sive_probe_set_int(p, SIVE_OPT_CHAIN_END, 1);
    sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, 1);
    ck_assert_int_eq(sive_probe_run(p, &m, theta_star, &r), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

static char *tmp_path(const char *name)
{
    static char buf[4][256];
    static int k;
    char *s = buf[k++ % 4];
    snprintf(s, 256, "%s/sive_test_%ld_%s", P_tmpdir, (long)getpid(), name);
    return s;
}

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *p = malloc(*n);
    ck_assert_uint_eq(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

static void write_all(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

START_TEST(file_round_trip)
{
    sive_result *r = run_range(1, 3, 11, theta_star);
    const char *path = tmp_path("rt.sres");
    ck_assert_int_eq(sive_result_save(r, path, "note\nwith lines"), SIVE_OK);
    sive_result *back = NULL;
    char *note = NULL;
    ck_assert_msg(sive_result_load(path, &back, &note) == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_str_eq(note, "note\nwith lines");
    assert_same(r, back);
    /* lambda-hat is the unclipped mean, whose MCSE sive_result_mcse() is,
     * whenever no chain is clipped (sive.h) */
    ck_assert(!(sive_result_flags(back) & SIVE_FLAG_NEGATIVE_SIVE));
    ck_assert(same(sive_result_lambda(back),
                   sive_result_stat(back, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY)));
    /* a loaded part merges like the one in memory */
    sive_result *rest[] = {run_range(0, 1, 11, theta_star), run_range(3, 4, 11, theta_star)};
    sive_result *whole = run_range(0, 0, 11, theta_star), *m = NULL;
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *[]){rest[0], back, rest[1]}, 3),
                     SIVE_OK);
    assert_same(whole, m);
    sive_result_free(back);
    ck_assert_int_eq(sive_result_load(tmp_path("absent.sres"), &back, NULL), SIVE_E_IO);
    ck_assert_ptr_null(back);
    sive_free(note);
    unlink(path);
    sive_result_free(m);
    sive_result_free(whole);
    sive_result_free(rest[0]);
    sive_result_free(rest[1]);
    sive_result_free(r);
}
END_TEST

/* In memory: to_bytes gives the file's bytes, from_bytes reads the file's
 * bytes to the same result, and a damaged or short buffer is refused as
 * the file is. */
START_TEST(bytes_round_trip)
{
    sive_result *r = run_range(1, 3, 11, theta_star);
    const char *path = tmp_path("mem.sres");
    ck_assert_int_eq(sive_result_save(r, path, "in memory"), SIVE_OK);
    size_t n, len = 1;
    unsigned char *file = read_all(path, &n);
    void *mem = (void *)1;
    ck_assert_int_eq(sive_result_to_bytes(r, "in memory", &mem, &len), SIVE_OK);
    ck_assert_uint_eq(len, n);
    ck_assert_mem_eq(mem, file, n);
    sive_result *back = NULL, *x = (sive_result *)1;
    char *note = NULL;
    ck_assert_msg(sive_result_from_bytes(file, n, &back, &note) == SIVE_OK, "%s",
                  sive_last_errmsg());
    ck_assert_str_eq(note, "in memory");
    assert_same(r, back);
    /* the loaded result goes back to the same bytes */
    void *again = NULL;
    size_t len2 = 0;
    ck_assert_int_eq(sive_result_to_bytes(back, note, &again, &len2), SIVE_OK);
    ck_assert_uint_eq(len2, n);
    ck_assert_mem_eq(again, file, n);
    /* damage, truncation, NULL */
    ((unsigned char *)mem)[n / 2] ^= 4;
    ck_assert_int_eq(sive_result_from_bytes(mem, n, &x, NULL), SIVE_E_FORMAT);
    ck_assert_ptr_null(x);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "result bytes"));
    for (size_t k = 0; k < 40; k++)
        ck_assert_int_eq(sive_result_from_bytes(file, k, &x, NULL), SIVE_E_FORMAT);
    ck_assert_int_eq(sive_result_from_bytes(NULL, n, &x, NULL), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_result_from_bytes(NULL, 0, &x, NULL), SIVE_E_FORMAT); /* empty */
    sive_free(mem);
    ck_assert_int_eq(sive_result_to_bytes(NULL, NULL, &mem, &len), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(mem);
    ck_assert_uint_eq(len, 0);
    sive_free(again);
    sive_free(note);
    free(file);
    unlink(path);
    sive_result_free(back);
    sive_result_free(r);
}
END_TEST

/* Every single-byte change and every truncation of a small file is
 * refused with SIVE_E_FORMAT (the hash covers every byte). */
START_TEST(damage_is_refused)
{
    sive_result *r = run_range(2, 3, 11, theta_star);
    const char *path = tmp_path("ok.sres"), *bad = tmp_path("bad.sres");
    ck_assert_int_eq(sive_result_save(r, path, "x"), SIVE_OK);
    size_t n;
    unsigned char *p = read_all(path, &n);
    unsigned char *q = malloc(n);
    for (size_t i = 0; i < n; i++) {
        memcpy(q, p, n);
        q[i] ^= (unsigned char)(1u << (i % 8));
        write_all(bad, q, n);
        sive_result *x = NULL;
        char *note = NULL;
        ck_assert_msg(sive_result_load(bad, &x, &note) == SIVE_E_FORMAT, "byte %zu accepted", i);
        ck_assert_ptr_null(x);
        ck_assert_ptr_null(note);
    }
    for (size_t len = 0; len < n; len++) {
        write_all(bad, p, len);
        sive_result *x = NULL;
        ck_assert_msg(sive_result_load(bad, &x, NULL) == SIVE_E_FORMAT, "length %zu accepted",
                      len);
    }
    free(q);
    free(p);
    unlink(path);
    unlink(bad);
    sive_result_free(r);
}
END_TEST


/* ---- forged files: fields changed and the hash recomputed, as an
 * attacker would (FNV-1a is a checksum, not a signature) ---- */

/* Offsets in a format-4 file (test/sres_forge.h). */
#define OFF_F(p, k) (sres_head(p) + 8 * (size_t)(k))
#define get64 sres_get64
#define put64 sres_put64
#define rehash sres_rehash

/* Where the first chain record starts (after the error text, the note
 * and the run notes). */
#define chains_at sres_chains

/* The file of chain 2 of the 4-chain probe, in memory. */
static unsigned char *one_chain_file(size_t *n)
{
    sive_result *r = run_range(2, 3, 11, theta_star);
    const char *path = tmp_path("one.sres");
    ck_assert_int_eq(sive_result_save(r, path, ""), SIVE_OK);
    sive_result_free(r);
    unsigned char *p = read_all(path, n);
    unlink(path);
    return realloc(p, *n + 64); /* room for forged records */
}

/* one_chain_file()'s file rewritten to hold chain c alone. */
static void set_one_chain(unsigned char *p, int64_t c)
{
    put64(p, sres_opt(p, SIVE_OPT_CHAIN_BEGIN), (uint64_t)c);
    put64(p, sres_opt(p, SIVE_OPT_CHAIN_END), (uint64_t)c + 1);
    put64(p, OFF_F(p, SRES_BEGIN), (uint64_t)c);
    put64(p, OFF_F(p, SRES_END), (uint64_t)c + 1);
}

static int load_forged(unsigned char *p, size_t n, sive_result **out)
{
    rehash(p, n);
    const char *path = tmp_path("forged.sres");
    write_all(path, p, n);
    int rc = sive_result_load(path, out, NULL);
    unlink(path);
    return rc;
}

/* R1: a header's sizes set no allocation before the payload is checked:
 * 2^40 steps claimed without the traces is FORMAT (it was NOMEM after
 * asking for 5 x 8 TiB), and a chain that diverged at step 0 of 2^40
 * costs its record, not 40 TiB. */
START_TEST(header_sizes_are_checked_first)
{
    size_t n;
    unsigned char *p = one_chain_file(&n);
    const size_t at = chains_at(p);
    put64(p, sres_opt(p, SIVE_OPT_STEPS), (uint64_t)1 << 40);
    put64(p, at + 8, (uint64_t)1 << 40);
    put64(p, at + 16, (uint64_t)1 << 40);
    sive_result *r = NULL;
    ck_assert_int_eq(load_forged(p, at + 24 + 8, &r), SIVE_E_FORMAT);
    ck_assert_ptr_null(r);
    put64(p, OFF_F(p, SRES_STATUS), (uint64_t)SIVE_E_DIVERGED);
    put64(p, at, SIVE_CHAIN_DIVERGED);
    put64(p, at + 8, 0);
    put64(p, at + 16, 0);
    ck_assert_msg(load_forged(p, at + 24 + 8, &r) == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_int_eq(sive_result_steps(r), (int64_t)1 << 40);
    ck_assert_int_eq(sive_result_chain_status(r, 2, NULL), SIVE_CHAIN_DIVERGED);
    size_t len = 1;
    sive_result_trace(r, SIVE_TRACE_LBAR, 2, &len);
    ck_assert_uint_eq(len, 0);
    sive_result_free(r);
    /* a range of 4096 chains cannot fit a payload of one record */
    put64(p, sres_opt(p, SIVE_OPT_CHAINS), 4096);
    put64(p, sres_opt(p, SIVE_OPT_CHAIN_BEGIN), 0);
    put64(p, sres_opt(p, SIVE_OPT_CHAIN_END), 4096);
    put64(p, OFF_F(p, SRES_BEGIN), 0);
    put64(p, OFF_F(p, SRES_END), 4096);
    ck_assert_int_eq(load_forged(p, at + 24 + 8, &r), SIVE_E_FORMAT);
    free(p);
}
END_TEST

/* R7: a part that says OK may not hold a chain stopped by a callback. */
START_TEST(status_agrees_with_chains)
{
    size_t n;
    unsigned char *p = one_chain_file(&n);
    put64(p, chains_at(p), SIVE_CHAIN_CALLBACK);
    sive_result *r = NULL;
    ck_assert_int_eq(load_forged(p, n, &r), SIVE_E_FORMAT);
    ck_assert_ptr_null(r);
    free(p);
}
END_TEST

/* E1: a chain estimate that is NaN stays NaN (fmax(0, NaN) was 0 and
 * joined the mean): Lbar alternating +-1e300 has an infinite variance,
 * and s2 = 1e308 an infinite correction. */
START_TEST(nan_estimate_stays_nan)
{
    size_t n;
    unsigned char *p = one_chain_file(&n);
    const size_t lbar = chains_at(p) + 24, s2 = lbar + 60 * 8;
    for (size_t m = 0; m < 60; m++) {
        double a = m % 2 ? 1e300 : -1e300, b = 1e308;
        uint64_t ua, ub;
        memcpy(&ua, &a, 8);
        memcpy(&ub, &b, 8);
        put64(p, lbar + 8 * m, ua);
        put64(p, s2 + 8 * m, ub);
    }
    sive_result *r = NULL;
    ck_assert_msg(load_forged(p, n, &r) == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, 2)));
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_SIVE, 2)));
    ck_assert(isnan(sive_result_lambda(r)));
    sive_result_free(r);
    free(p);
}
END_TEST

/* R4: a dtype mismatch is named as one. */
START_TEST(dtype_mismatch_is_named)
{
    size_t n;
    unsigned char *p = one_chain_file(&n);
    put64(p, OFF_F(p, SRES_DTYPE), SIVE_F32);
    sive_result *r = NULL, *a = run_range(0, 2, 11, theta_star), *b = run_range(3, 4, 11, theta_star);
    ck_assert_int_eq(load_forged(p, n, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_dtype(r), SIVE_F32);
    ck_assert_int_eq(sive_result_dtype(a), SIVE_F64);
    expect_refused((const sive_result *[]){a, r, b}, 3, "dtype (f32; part 0: f64)");
    sive_result_free(r);
    sive_result_free(a);
    sive_result_free(b);
    free(p);
}
END_TEST

/* sive_result_dtype(): the model's precision comes back from a file and
 * through a merge of float parts and another save; a file whose dtype is
 * neither SIVE_F32 nor SIVE_F64 is refused, never read as one; NULL has
 * none. */
START_TEST(dtype_is_kept)
{
    enum { K = 4 };
    size_t n;
    unsigned char *p = one_chain_file(&n);
    sive_result *parts[K] = {0}, *m = NULL, *back = NULL, *bad = (sive_result *)1;
    ck_assert_int_eq(sive_result_dtype(NULL), SIVE_DTYPE_UNKNOWN);
    put64(p, OFF_F(p, SRES_DTYPE), SIVE_F32);
    for (int64_t c = 0; c < K; c++) {
        set_one_chain(p, c);
        ck_assert_msg(load_forged(p, n, &parts[c]) == SIVE_OK, "%s", sive_last_errmsg());
        ck_assert_int_eq(sive_result_dtype(parts[c]), SIVE_F32);
    }
    ck_assert_msg(sive_result_merge(&m, (const sive_result *const *)parts, K) == SIVE_OK, "%s",
                  sive_last_errmsg());
    ck_assert_int_eq(sive_result_dtype(m), SIVE_F32);
    void *bytes = NULL;
    size_t len = 0;
    ck_assert_int_eq(sive_result_to_bytes(m, NULL, &bytes, &len), SIVE_OK);
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    ck_assert_int_eq(sive_result_dtype(back), SIVE_F32);
    const uint64_t wrong[] = {SIVE_DTYPE_UNKNOWN, 3, UINT64_MAX};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        put64(p, OFF_F(p, SRES_DTYPE), wrong[i]);
        ck_assert_int_eq(load_forged(p, n, &bad), SIVE_E_FORMAT);
        ck_assert_ptr_null(bad);
    }
    sive_free(bytes);
    sive_result_free(back);
    sive_result_free(m);
    for (int c = 0; c < K; c++)
        sive_result_free(parts[c]);
    free(p);
}
END_TEST

/* R2, R3: a junk file is refused from its header, whatever its size (a
 * sparse 1 TiB file would have been read whole), and a FIFO is refused
 * without blocking (it used to wait for a writer forever). */
START_TEST(header_before_payload_no_fifo)
{
    const char *path = tmp_path("junk.sres");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("junk junk junk junk junk junk junk", f);
    fclose(f);
    if (truncate(path, (off_t)1 << 40) != 0)
        ck_assert_int_eq(truncate(path, (off_t)1 << 34), 0);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_result_load(path, &r, NULL), SIVE_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "not a sive result file"));
    unlink(path);
    const char *fifo = tmp_path("fifo.sres");
    unlink(fifo);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(sive_result_load(fifo, &r, NULL), SIVE_E_IO);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "not a regular file"));
    unlink(fifo);
}
END_TEST

/* R5: merging K one-chain parts costs memory linear in K (each part
 * used to hold K chain records: 1024 parts took 235 MB more). */
START_TEST(merge_memory_is_linear)
{
    enum { K = 1024 };
    size_t n;
    unsigned char *p = one_chain_file(&n);
    sive_result **parts = calloc(K, sizeof *parts);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    put64(p, sres_opt(p, SIVE_OPT_CHAINS), K);
    for (int64_t c = 0; c < K; c++) {
        set_one_chain(p, c);
        ck_assert_msg(load_forged(p, n, &parts[c]) == SIVE_OK, "%s", sive_last_errmsg());
    }
    sive_result *m = NULL;
    ck_assert_msg(sive_result_merge(&m, (const sive_result *const *)parts, K) == SIVE_OK, "%s",
                  sive_last_errmsg());
    getrusage(RUSAGE_SELF, &ru1);
    ck_assert_int_eq(sive_result_chains_ok(m), K);
    /* K^2 chain records would be K^2 x 224 B = 235 MB */
    ck_assert_msg(ru1.ru_maxrss - ru0.ru_maxrss < 128 * 1024, "peak grew by %ld kB",
                  ru1.ru_maxrss - ru0.ru_maxrss);
    for (int c = 0; c < K; c++)
        sive_result_free(parts[c]);
    free(parts);
    sive_result_free(m);
    free(p);
}
END_TEST

/* R6: a part of another model or data set (the identity differs) is
 * refused. */
START_TEST(identity_is_checked)
{
    size_t n;
    unsigned char *p = one_chain_file(&n);
    sive_result *a = run_range(0, 2, 11, theta_star), *b = run_range(3, 4, 11, theta_star),
                *r = NULL;
    put64(p, OFF_F(p, SRES_IDENTITY), 0x1234);
    ck_assert_int_eq(load_forged(p, n, &r), SIVE_OK);
    expect_refused((const sive_result *[]){a, r, b}, 3, "another model or data set");
    sive_result_free(r);
    sive_result_free(a);
    sive_result_free(b);
    free(p);
}
END_TEST

#ifndef SIVE_TEST_DATA_DIR
#define SIVE_TEST_DATA_DIR "test/data"
#endif

/* Offsets in a format-3 file: the identity word, and control_variate
 * (then grad_control_variate and precondition). */
enum { V3_IDENTITY = 256, V3_CV = 168 };

/* Files of older formats still load: test/data/result_v3.sres was written
 * by the format-3 writer (chains 1-2 of run_range(1, 3, 11), before
 * format 4), and formats 2 and 1 are made from it by dropping the fields
 * they did not have (the identity, the sampler options, control_variate:
 * all 0 there, the behaviour of the versions that wrote them).  Each
 * loads to the run of today bit for bit, merges with parts in memory,
 * and saves as format 5. */
START_TEST(old_formats_load)
{
    size_t n;
    unsigned char *p = read_all(SIVE_TEST_DATA_DIR "/result_v3.sres", &n);
    ck_assert_int_eq(get64(p, SRES_OFF_VERSION), 3);
    sive_result *whole = run_range(0, 0, 11, theta_star), *a = run_range(0, 1, 11, theta_star),
                *b = run_range(3, 4, 11, theta_star), *now = run_range(1, 3, 11, theta_star);
    for (uint64_t v = 3; v >= 1; v--) {
        size_t len = n;
        unsigned char *q = malloc(n);
        memcpy(q, p, n);
        put64(q, SRES_OFF_VERSION, v);
        if (v <= 2) { /* no identity word, no sampler options */
            memmove(q + V3_IDENTITY, q + V3_IDENTITY + 8, len - V3_IDENTITY - 8);
            len -= 8;
            memmove(q + V3_CV + 8, q + V3_CV + 24, len - V3_CV - 24);
            len -= 16;
        }
        if (v == 1) { /* nor the control_variate word */
            memmove(q + V3_CV, q + V3_CV + 8, len - V3_CV - 8);
            len -= 8;
        }
        sive_result *r = NULL, *m = NULL;
        char *note = NULL;
        rehash(q, len);
        ck_assert_msg(sive_result_from_bytes(q, len, &r, &note) == SIVE_OK, "version %d: %s",
                      (int)v, sive_last_errmsg());
        ck_assert_ptr_nonnull(strstr(note, "format 3"));
        ck_assert_int_eq(sive_result_dtype(r), SIVE_F64); /* every format stores it */
        assert_same(now, r);
        ck_assert_msg(sive_result_merge(&m, (const sive_result *[]){a, r, b}, 3) == SIVE_OK,
                      "%s", sive_last_errmsg());
        assert_same(whole, m);
        void *again = NULL;
        size_t len2 = 0;
        ck_assert_int_eq(sive_result_to_bytes(r, note, &again, &len2), SIVE_OK);
        ck_assert_uint_eq(get64(again, SRES_OFF_VERSION), 5);
        sive_free(again);
        sive_free(note);
        sive_result_free(m);
        sive_result_free(r);
        free(q);
    }
    sive_result *rs[] = {whole, a, b, now};
    for (size_t i = 0; i < 4; i++)
        sive_result_free(rs[i]);
    free(p);
}
END_TEST

static int from_forged(unsigned char *q, size_t n, sive_result **out);

/* A probe of the 4-chain quadratic of run_range() (60 steps unless
 * steps), with the options as text pairs (NULL-terminated). */
static sive_probe *probe_with(int64_t steps, const char *const *set)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    const struct { sive_option o; int64_t v; } iv[] = {
        {SIVE_OPT_STEPS, steps}, {SIVE_OPT_GROUPS, 4}, {SIVE_OPT_CHAINS, 4},
        {SIVE_OPT_THREADS, 2}, {SIVE_OPT_SEED, 11}};
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++)
        ck_assert_int_eq(sive_probe_set_int(p, iv[i].o, iv[i].v), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 10.0), SIVE_OK);
    for (; set && set[0]; set += 2)
        ck_assert_msg(sive_probe_set_text(p, set[0], set[1]) == SIVE_OK, "%s %s", set[0],
                      sive_probe_errmsg(p));
    return p;
}

/* p's run of chains [begin, end) (0, 0: all) on the quadratic. */
static sive_result *run_probe(sive_probe *p, int64_t begin, int64_t end)
{
    sive_model m = quad_fixture_model(&qf, D);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, begin), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, end), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, &m, theta_star, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    return r;
}

/* r saved and loaded (bytes; note kept); the file saves to the same
 * bytes again. */
static sive_result *reload(const sive_result *r)
{
    void *b = NULL, *b2 = NULL;
    size_t n = 0, n2 = 0;
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_to_bytes(r, "n", &b, &n), SIVE_OK);
    ck_assert_msg(sive_result_from_bytes(b, n, &back, NULL) == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_int_eq(sive_result_to_bytes(back, "n", &b2, &n2), SIVE_OK);
    ck_assert_uint_eq(n, n2);
    ck_assert_mem_eq(b, b2, n);
    sive_free(b);
    sive_free(b2);
    return back;
}

static const char *const MALA[] = {"metropolis", "1", "h", "0.5", NULL};
static const char *const ULA_AUTO[] = {"metropolis", "0", "c_h", "auto", NULL};

/* Format 5 keeps the run notes: a run whose health text has them (the
 * Metropolis sampler's line; the radius search's) gives, saved and
 * loaded, the run's health text byte for byte (format 4 dropped them). */
START_TEST(run_notes_round_trip)
{
    const char *const *sets[] = {MALA, ULA_AUTO};
    const char *const lines[] = {"\nmetropolis: tail acceptance", "radius: chosen from the loss"};
    for (int k = 0; k < 2; k++) {
        sive_probe *p = probe_with(k ? 400 : 60, sets[k]);
        sive_result *r = run_probe(p, 1, 3), *back = reload(r);
        ck_assert_msg(strstr(sive_result_health(r), lines[k]), "%s", sive_result_health(r));
        assert_same(r, back);
        /* and a file path, as the bytes */
        const char *path = tmp_path("notes.sres");
        sive_result *f = NULL;
        ck_assert_int_eq(sive_result_save(r, path, NULL), SIVE_OK);
        ck_assert_int_eq(sive_result_load(path, &f, NULL), SIVE_OK);
        ck_assert_str_eq(sive_result_health(f), sive_result_health(r));
        unlink(path);
        sive_result_free(f);
        sive_result_free(back);
        sive_result_free(r);
        sive_probe_free(p);
    }
}
END_TEST

/* Run notes that are not text lines are damage: a NUL inside, or no
 * newline at the end. */
START_TEST(run_notes_checked)
{
    sive_probe *p = probe_with(60, MALA);
    sive_result *r = run_probe(p, 2, 3), *x = NULL;
    void *b = NULL;
    size_t n = 0;
    ck_assert_int_eq(sive_result_to_bytes(r, "", &b, &n), SIVE_OK);
    unsigned char *q = b;
    const size_t at = sres_run_notes(q), len = (size_t)get64(q, at);
    ck_assert_uint_gt(len, 20);
    ck_assert_int_eq(q[at + 8 + len - 1], '\n');
    q[at + 8 + 5] = 0;
    ck_assert_int_eq(from_forged(q, n, &x), SIVE_E_FORMAT);
    q[at + 8 + 5] = 'x';
    ck_assert_int_eq(from_forged(q, n, &x), SIVE_OK); /* still text */
    sive_result_free(x);
    q[at + 8 + len - 1] = 'x';
    ck_assert_int_eq(from_forged(q, n, &x), SIVE_E_FORMAT);
    ck_assert_ptr_null(x);
    sive_free(b);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* test/data/result_v4_notes.sres: chains 0-3 of a Metropolis run (the
 * quadratic of this file, theta_star, t 10, 60 steps, 4 groups, seed 11,
 * h 0.5, 1 thread), saved by the format-4 writer (commit 5ecf20f) whose
 * files had no run notes.  It loads to that run's numbers, with the
 * flags' text only, and saves as format 5 with empty run notes. */
START_TEST(format4_without_notes)
{
    size_t n;
    unsigned char *p = read_all(SIVE_TEST_DATA_DIR "/result_v4_notes.sres", &n);
    ck_assert_int_eq(get64(p, SRES_OFF_VERSION), 4);
    sive_result *r = NULL;
    char *note = NULL;
    ck_assert_msg(sive_result_from_bytes(p, n, &r, &note) == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_ptr_nonnull(strstr(note, "format 4"));
    ck_assert(same(sive_result_lambda(r), 1.0164708691512698));
    int64_t v = 0;
    ck_assert_int_eq(sive_result_option_int(r, SIVE_OPT_METROPOLIS, &v), SIVE_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_ptr_null(strstr(sive_result_health(r), "metropolis:"));
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "low_ess: chain 0"));
    /* the run of today: the same numbers; its health text adds the note */
    sive_probe *pr = probe_with(60, MALA);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_THREADS, 1), SIVE_OK);
    sive_result *now = run_probe(pr, 0, 0);
    ck_assert(same(sive_result_lambda(now), sive_result_lambda(r)));
    const char *hn = sive_result_health(now), *ml = strstr(hn, "metropolis: ");
    ck_assert_ptr_nonnull(ml);
    ck_assert_uint_eq((size_t)(ml - hn), strlen(sive_result_health(r)));
    ck_assert(!strncmp(hn, sive_result_health(r), (size_t)(ml - hn)));
    sive_result *again = reload(r);
    assert_same(r, again);
    void *b = NULL;
    size_t bn = 0;
    ck_assert_int_eq(sive_result_to_bytes(r, note, &b, &bn), SIVE_OK);
    ck_assert_uint_eq(get64(b, SRES_OFF_VERSION), 5);
    ck_assert_uint_eq(get64(b, sres_run_notes(b)), 0);
    /* 8 bytes of run notes, and 16 per option record the file lacks
     * (options added since it was written: saved with their defaults) */
    size_t rec_old = 0, rec_new = 0;
    ck_assert_int_eq(sive_result_bytes_options(p, n, NULL, 0, &rec_old), SIVE_OK);
    ck_assert_int_eq(sive_result_bytes_options(b, bn, NULL, 0, &rec_new), SIVE_OK);
    ck_assert_uint_ge(rec_new, rec_old);
    ck_assert_uint_eq(bn, n + 8 + 16 * (rec_new - rec_old));
    sive_free(b);
    sive_free(note);
    sive_result_free(again);
    sive_result_free(now);
    sive_result_free(r);
    sive_probe_free(pr);
    free(p);
}
END_TEST

/* Merging keeps the run notes: lines every part has verbatim once (here
 * the radius search's: ULA with c_h = auto, whose parts search as the
 * whole run does), so the merged parts are the whole run, health text
 * included, byte for byte; lines that differ are listed per part, by
 * first chain, as "key (chains a..b): rest". */
START_TEST(merge_keeps_notes)
{
    sive_probe *p = probe_with(400, ULA_AUTO);
    sive_result *whole = run_probe(p, 0, 0), *a = run_probe(p, 0, 1), *b = run_probe(p, 1, 4);
    ck_assert_ptr_nonnull(strstr(sive_result_health(whole), "radius: chosen from the loss"));
    sive_result *m = NULL, *la = reload(a), *lb = reload(b);
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *[]){b, a}, 2), SIVE_OK);
    assert_same(whole, m);
    sive_result_free(m);
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *[]){la, lb}, 2), SIVE_OK);
    assert_same(whole, m);
    sive_result *lm = reload(m);
    assert_same(whole, lm);
    sive_result_free(lm);
    sive_result_free(m);
    sive_probe_free(p);
    /* the Metropolis line summarises a part's chains: one per part */
    p = probe_with(60, MALA);
    sive_result *w2 = run_probe(p, 0, 0), *c = run_probe(p, 2, 4), *d = run_probe(p, 0, 2);
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *[]){c, d}, 2), SIVE_OK);
    const char *hw = sive_result_health(w2), *hm = sive_result_health(m);
    const char *mw = strstr(hw, "metropolis: "), *mc = strstr(sive_result_health(c), "metropolis: "),
               *md = strstr(sive_result_health(d), "metropolis: ");
    ck_assert(mw && mc && md);
    /* the lines after it (radius_check's) are the same in every part: once */
    const char *ed = strchr(md, '\n'), *ec = strchr(mc, '\n');
    ck_assert(ed && ec);
    char want[8192];
    snprintf(want, sizeof want, "%.*smetropolis (chains 0..1): %.*smetropolis (chains 2..3): %s",
             (int)(mw - hw), hw, (int)(ed + 1 - (md + 12)), md + 12, mc + 12);
    ck_assert_str_eq(hm, want);
    sive_result_free(m);
    /* one part alone: its notes as they are */
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *[]){w2}, 1), SIVE_OK);
    ck_assert_str_eq(sive_result_health(m), hw);
    sive_result *rs[] = {whole, a, b, la, lb, w2, c, d, m};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        sive_result_free(rs[i]);
    sive_probe_free(p);
}
END_TEST

/* Merged results merged again.  A merge is always the whole run (chains
 * 0..K-1), so it merges again only alone, or with a part whose chains it
 * already has (refused: overlap): alone, the notes come back byte for
 * byte, also from its file.  A part whose notes already tag a line with
 * its chains (a file whose notes came from a merge; forged here: a
 * one-chain part with "metropolis (chains c..c): ...") keeps that tag
 * alone, instead of "metropolis (chains c..c) (chains c..c): ...". */
START_TEST(remerge_tags_once)
{
    sive_probe *p = probe_with(60, MALA);
    sive_result *a = run_probe(p, 0, 2), *b = run_probe(p, 2, 4), *m = NULL, *mm = NULL;
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *[]){b, a}, 2), SIVE_OK);
    ck_assert_ptr_nonnull(strstr(sive_result_health(m), "metropolis (chains 2..3): "));
    sive_result *lm = reload(m);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(sive_result_merge(&mm, (const sive_result *[]){k ? lm : m}, 1),
                         SIVE_OK);
        ck_assert_str_eq(sive_result_health(mm), sive_result_health(m));
        sive_result_free(mm);
    }
    ck_assert_int_eq(sive_result_merge(&mm, (const sive_result *[]){lm, b}, 2),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "overlap"));
    sive_result *rs[] = {a, b, m, lm};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        sive_result_free(rs[i]);
    sive_probe_free(p);
    /* parts whose notes already carry their tag */
    enum { K = 4, LINE = 64 };
    size_t n;
    unsigned char *f = one_chain_file(&n);
    const size_t at = sres_run_notes(f);
    ck_assert_uint_eq(get64(f, at), 0);
    unsigned char *q = calloc(1, n + LINE);
    ck_assert_ptr_nonnull(q);
    memcpy(q, f, at);
    put64(q, at, LINE);
    memcpy(q + at + 8 + LINE, f + at + 8, n - at - 8);
    put64(q, sres_opt(q, SIVE_OPT_CHAINS), K);
    sive_result *parts[K];
    for (int64_t c = 0; c < K; c++) {
        char *line = (char *)q + at + 8;
        memset(line, 'x', LINE);
        int w = snprintf(line, LINE, "metropolis (chains %lld..%lld): tail acceptance %lld ",
                         (long long)c, (long long)c, (long long)c);
        line[w] = 'x';
        line[LINE - 1] = '\n';
        set_one_chain(q, c);
        ck_assert_msg(from_forged(q, n + LINE, &parts[c]) == SIVE_OK, "%s", sive_last_errmsg());
    }
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *const *)parts, K), SIVE_OK);
    const char *h = sive_result_health(m);
    ck_assert_msg(!strstr(h, ") (chains "), "%s", h);
    for (int c = 0; c < K; c++) {
        char want[64];
        snprintf(want, sizeof want, "metropolis (chains %d..%d): tail acceptance %d ", c, c, c);
        ck_assert_msg(strstr(h, want), "%s", h);
    }
    sive_result_free(m);
    for (int c = 0; c < K; c++)
        sive_result_free(parts[c]);
    free(q);
    free(f);
}
END_TEST

/* A forged copy of r whose radius is h (its file's h field rewritten). */
static sive_result *with_h(const sive_result *r, double h)
{
    void *bytes = NULL;
    size_t n = 0;
    ck_assert_int_eq(sive_result_to_bytes(r, "", &bytes, &n), SIVE_OK);
    unsigned char *q = bytes;
    uint64_t hb;
    memcpy(&hb, &h, 8);
    put64(q, OFF_F(q, SRES_H), hb);
    sive_result *f = NULL;
    ck_assert_int_eq(from_forged(q, n, &f), SIVE_OK);
    sive_free(bytes);
    return f;
}

/* sive_probe_set_radius_from(): parts that take the radius a whole run
 * (or a part, or its loaded file) chose from the loss run no search and
 * merge into the whole run bit for bit, health text included; refused
 * for a result whose radius was set, for a run whose radius is set, and
 * for other options, theta* or moved parameters; merge refuses parts whose radii
 * differ (one taken from a forged file). */
START_TEST(radius_from_earlier_result)
{
    sive_probe *p = probe_with(400, ULA_AUTO);
    sive_result *whole = run_probe(p, 0, 0), *first = run_probe(p, 0, 1);
    sive_result *lfirst = reload(first);
    ck_assert_int_eq(sive_probe_set_radius_from(p, lfirst), SIVE_OK);
    sive_result_free(lfirst); /* the probe keeps what it needs */
    sive_result *b = run_probe(p, 1, 3), *c = run_probe(p, 3, 4), *m = NULL;
    ck_assert_int_eq(sive_result_merge(&m, (const sive_result *[]){first, b, c}, 3), SIVE_OK);
    assert_same(whole, m);
    sive_result_free(m);
    /* a whole run with the radius taken is the whole run */
    sive_result *w2 = run_probe(p, 0, 0);
    assert_same(whole, w2);
    sive_result_free(w2);
    /* refusals at the run: another option, another theta*, a radius set */
    sive_model mo = quad_fixture_model(&qf, D);
    const double other[D] = {0.5, -0.25, 1.5};
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 12), SIVE_OK);
    sive_result *x = NULL;
    ck_assert_int_eq(sive_probe_run(p, &mo, theta_star, &x), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(x);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "'seed'"), "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 11), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &mo, other, &x), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "another theta*"), "%s", sive_probe_errmsg(p));
    ck_assert_msg(strstr(sive_probe_errmsg(p), "let this run search"), "%s",
                  sive_probe_errmsg(p));
    /* the message names what differs: here the dimension, not theta* */
    sive_model m2 = quad_fixture_model(&qf, D - 1);
    ck_assert_int_eq(sive_probe_run(p, &m2, theta_star, &x), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "dim 3, n_examples 0 (this run: 2, 0)") &&
                      !strstr(sive_probe_errmsg(p), "another theta*"),
                  "%s", sive_probe_errmsg(p));
    const uint64_t first_two[] = {0, 2};
    ck_assert_int_eq(sive_probe_set_params(p, first_two, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &mo, theta_star, &x), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "other parameters"), "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_probe_set_params(p, NULL, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_C_H, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &mo, theta_star, &x), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "comes from the loss"), "%s",
                  sive_probe_errmsg(p));
    /* refused at the call: a result whose radius was set */
    ck_assert_int_eq(sive_probe_set_radius_from(p, NULL), SIVE_OK);
    sive_result *fixed = run_probe(p, 0, 1);
    ck_assert_int_eq(sive_probe_set_radius_from(p, fixed), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_radius_from(NULL, whole), SIVE_E_INVALID_ARG);
    /* reset forgets it: the run searches again */
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_C_H, 0.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_radius_from(p, whole), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_radius_from(p, NULL), SIVE_OK);
    sive_result *d = run_probe(p, 3, 4);
    assert_same(c, d);
    /* a part with another h (from a forged copy of the whole run): the
     * merge names the radius */
    const double h2 = 0.75 * sive_result_stat(whole, SIVE_STAT_H, 0);
    sive_result *forged = with_h(whole, h2);
    ck_assert_int_eq(sive_probe_set_radius_from(p, forged), SIVE_OK);
    sive_result *e = run_probe(p, 3, 4);
    ck_assert(same(sive_result_stat(e, SIVE_STAT_H, 3), h2));
    expect_refused((const sive_result *[]){first, b, e}, 3, "radius h");
    sive_result *rs[] = {whole, first, b, c, fixed, d, forged, e};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        sive_result_free(rs[i]);
    sive_probe_free(p);
}
END_TEST

/* Run notes longer than the caller's note limit (1 MiB): the merge of
 * many parts lists a line per part (an mpirun probe merges one part per
 * chain), and the merged result saves and loads back (the loader refused
 * run notes above 1 MiB as damage, so a file the library wrote did not
 * load).  K one-chain parts, each with a 1 KiB line of its own. */
START_TEST(long_run_notes_load)
{
    enum { K = 1100, LINE = 1024 };
    size_t n;
    unsigned char *p = one_chain_file(&n);
    const size_t at = sres_run_notes(p);
    ck_assert_uint_eq(get64(p, at), 0);
    unsigned char *q = malloc(n + LINE);
    ck_assert_ptr_nonnull(q);
    memcpy(q, p, at);
    put64(q, at, LINE);
    memcpy(q + at + 8 + LINE, p + at + 8, n - at - 8);
    put64(q, sres_opt(q, SIVE_OPT_CHAINS), K);
    sive_result **parts = calloc(K, sizeof *parts);
    for (int64_t c = 0; c < K; c++) {
        char *line = (char *)q + at + 8;
        memset(line, 'x', LINE);
        int k = snprintf(line, LINE, "metropolis: tail acceptance of chain %lld ", (long long)c);
        line[k] = 'x';
        line[LINE - 1] = '\n';
        set_one_chain(q, c);
        ck_assert_msg(from_forged(q, n + LINE, &parts[c]) == SIVE_OK, "%s", sive_last_errmsg());
    }
    sive_result *m = NULL;
    ck_assert_msg(sive_result_merge(&m, (const sive_result *const *)parts, K) == SIVE_OK, "%s",
                  sive_last_errmsg());
    ck_assert_uint_gt(strlen(sive_result_health(m)), (size_t)K * LINE);
    sive_result *back = reload(m);
    ck_assert_str_eq(sive_result_health(back), sive_result_health(m));
    for (int c = 0; c < K; c++)
        sive_result_free(parts[c]);
    free(parts);
    sive_result_free(back);
    sive_result_free(m);
    free(q);
    free(p);
}
END_TEST

/* A call of sive_probe_set_radius_from() that fails leaves the probe as
 * it was, as the other setters do: the radius taken before (here another
 * h, from a forged copy, so that a search would show) is kept. */
START_TEST(radius_from_failure_keeps_radius)
{
    sive_probe *p = probe_with(400, ULA_AUTO);
    sive_result *whole = run_probe(p, 0, 0);
    const double h2 = 0.75 * sive_result_stat(whole, SIVE_STAT_H, 0);
    sive_result *forged = with_h(whole, h2);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_C_H, 1.0), SIVE_OK);
    sive_result *fixed = run_probe(p, 0, 1);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_C_H, 0.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_radius_from(p, forged), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_radius_from(p, fixed), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "not chosen from the loss"));
    sive_result *e = run_probe(p, 3, 4);
    ck_assert(same(sive_result_stat(e, SIVE_STAT_H, 3), h2));
    sive_result *rs[] = {whole, forged, fixed, e};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        sive_result_free(rs[i]);
    sive_probe_free(p);
}
END_TEST

static int same_option(const sive_result *a, const sive_result *b, const sive_option_info *in)
{
    int64_t ia = 1, ib = 2;
    double da = 1.0, db = 2.0;
    if (in->type == SIVE_TYPE_INT)
        return sive_result_option_int(a, in->id, &ia) == SIVE_OK &&
               sive_result_option_int(b, in->id, &ib) == SIVE_OK && ia == ib;
    return sive_result_option_double(a, in->id, &da) == SIVE_OK &&
           sive_result_option_double(b, in->id, &db) == SIVE_OK &&
           ((isnan(da) && isnan(db)) || same(da, db));
}

/* Every option of the table comes back from a format-4 file, the
 * absolute radius mode, a negative seed and the anchor included, one
 * record per option in ascending id, each flagged ignorable exactly when
 * it holds the option's default. */
START_TEST(options_round_trip)
{
    sive_model m = quad_fixture_model(&qf, D);
    sive_probe *pr = NULL;
    ck_assert_int_eq(sive_probe_new(&pr), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_STEPS, 40), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_SEED, -5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_EVAL_STRIDE, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(pr, SIVE_OPT_H, 0.3), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(pr, SIVE_OPT_ANCHOR, 1.25), SIVE_OK);
    sive_result *r = NULL, *back = NULL;
    ck_assert_int_eq(sive_probe_run(pr, &m, theta_star, &r), SIVE_OK);
    void *bytes = NULL;
    size_t len = 0, k = 0;
    ck_assert_int_eq(sive_result_to_bytes(r, NULL, &bytes, &len), SIVE_OK);
    const unsigned char *p = bytes;
    ck_assert_uint_eq(get64(p, SRES_OFF_VERSION), 5);
    const sive_option_info *in;
    uint32_t prev = 0;
    for (; (in = sive_option_at(k)); k++) {
        const size_t at = sres_record(p, (uint32_t)in->id);
        ck_assert_uint_eq(at, SRES_OFF_PAYLOAD + 8 + 16 * k);
        ck_assert_uint_gt((uint32_t)in->id, prev);
        prev = (uint32_t)in->id;
        ck_assert_uint_eq((get64(p, at) >> 32) & 0xff, (uint64_t)in->type);
        int64_t iv = 0;
        double dv = 0.0;
        if (in->type == SIVE_TYPE_INT)
            sive_result_option_int(r, in->id, &iv);
        else
            sive_result_option_double(r, in->id, &dv);
        /* metropolis, kron_every, radius_lookahead, radius_check: a result holds the
         * resolved value, never the default -1 ("auto"); 0, the behaviour
         * of a library without them, is the ignorable value */
        const int64_t idflt = int_without(in);
        const int dflt = in->type == SIVE_TYPE_INT ? iv == idflt
                                                   : (isnan(dv) && isnan(in->double_default)) ||
                                                         same(dv, in->double_default);
        ck_assert_msg((get64(p, at) >> 40) == (uint64_t)dflt, "option %s", in->name);
    }
    ck_assert_uint_eq(get64(p, SRES_OFF_PAYLOAD), k);
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    for (size_t i = 0; (in = sive_option_at(i)); i++)
        ck_assert_msg(same_option(r, back, in), "option %s", in->name);
    double c_h = 0.0;
    ck_assert_int_eq(sive_result_option_double(back, SIVE_OPT_C_H, &c_h), SIVE_OK);
    ck_assert(isnan(c_h));
    assert_same(r, back);
    sive_free(bytes);
    sive_result_free(back);
    sive_result_free(r);
    sive_probe_free(pr);
}
END_TEST

/* p (n bytes, format 4) with a record (id, type, flags, value) inserted
 * where the ascending order puts it; the new length is n + 16. */
static unsigned char *with_record(const unsigned char *p, size_t n, uint64_t id, uint64_t type,
                                  uint64_t flags, uint64_t value)
{
    unsigned char *q = malloc(n + 16);
    const uint64_t count = get64(p, SRES_OFF_PAYLOAD);
    size_t at = SRES_OFF_PAYLOAD + 8;
    while (at < SRES_OFF_PAYLOAD + 8 + 16 * count && (uint32_t)get64(p, at) < id)
        at += 16;
    memcpy(q, p, at);
    put64(q, at, id | type << 32 | flags << 40);
    put64(q, at + 8, value);
    memcpy(q + at + 16, p + at, n - at);
    put64(q, SRES_OFF_PAYLOAD, count + 1);
    rehash(q, n + 16);
    return q;
}

static int from_forged(unsigned char *q, size_t n, sive_result **out)
{
    rehash(q, n);
    return sive_result_from_bytes(q, n, out, NULL);
}

/* The rule for options this library does not know (docs/abi.md, "Result
 * files"): a record flagged ignorable (its value is the option's default,
 * the behaviour of a library without it) is dropped; one that is not is
 * refused with a message naming the id.  A known option without a
 * record takes its default.  Records out of order, repeated, of the
 * wrong type or with unknown flags are refused. */
START_TEST(unknown_option_rule)
{
    sive_result *r = run_range(2, 3, 11, theta_star), *x = NULL;
    void *bytes = NULL;
    size_t n = 0;
    ck_assert_int_eq(sive_result_to_bytes(r, "u", &bytes, &n), SIVE_OK);
    const unsigned char *p = bytes;
    const uint32_t unknown = 999; /* no option has this id */
    ck_assert_ptr_null(sive_option_info_get((sive_option)unknown));
    unsigned char *q = with_record(p, n, unknown, SIVE_TYPE_INT, 1, 7);
    ck_assert_msg(sive_result_from_bytes(q, n + 16, &x, NULL) == SIVE_OK, "%s",
                  sive_last_errmsg());
    assert_same(r, x);
    void *again = NULL;
    size_t len = 0;
    ck_assert_int_eq(sive_result_to_bytes(x, "u", &again, &len), SIVE_OK);
    ck_assert_uint_eq(len, n); /* dropped: the bytes of this library's writer */
    ck_assert_mem_eq(again, p, n);
    sive_free(again);
    sive_result_free(x);
    free(q);
    q = with_record(p, n, unknown, SIVE_TYPE_DOUBLE, 0, 7);
    ck_assert_int_eq(sive_result_from_bytes(q, n + 16, &x, NULL), SIVE_E_FORMAT);
    ck_assert_ptr_null(x);
    ck_assert_msg(strstr(sive_last_errmsg(), "option id 999"), "%s", sive_last_errmsg());
    free(q);
    /* a known option without a record: its default (precondition 0) */
    q = malloc(n);
    memcpy(q, p, n);
    const size_t pre = sres_record(q, SIVE_OPT_PRECONDITION);
    ck_assert_uint_gt(pre, 0);
    memmove(q + pre, q + pre + 16, n - pre - 16);
    put64(q, SRES_OFF_PAYLOAD, get64(q, SRES_OFF_PAYLOAD) - 1);
    ck_assert_int_eq(from_forged(q, n - 16, &x), SIVE_OK);
    assert_same(r, x);
    sive_result_free(x);
    /* malformed records */
    const size_t steps = sres_record(p, SIVE_OPT_STEPS);
    const uint64_t key = get64(p, steps);
    const uint64_t bad_keys[] = {
        (key & ~((uint64_t)0xff << 32)) | (uint64_t)SIVE_TYPE_DOUBLE << 32, /* wrong type */
        (key & ~((uint64_t)0xff << 32)) | (uint64_t)3 << 32,                /* no such type */
        key | (uint64_t)2 << 40,                                             /* unknown flag */
        (key & ~(uint64_t)0xffffffffu) | SIVE_OPT_BASE_LR,                   /* out of order */
        (key & ~(uint64_t)0xffffffffu) | SIVE_OPT_C_H,                       /* repeated */
    };
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        memcpy(q, p, n);
        put64(q, steps, bad_keys[i]);
        ck_assert_msg(from_forged(q, n, &x) == SIVE_E_FORMAT, "bad key %zu accepted", i);
    }
    /* both radius modes, or neither */
    const double h = 0.5, nan = NAN;
    uint64_t hb, nb;
    memcpy(&hb, &h, 8);
    memcpy(&nb, &nan, 8);
    memcpy(q, p, n);
    put64(q, sres_opt(q, SIVE_OPT_H), hb);
    ck_assert_int_eq(from_forged(q, n, &x), SIVE_E_FORMAT);
    memcpy(q, p, n);
    put64(q, sres_opt(q, SIVE_OPT_C_H), nb);
    ck_assert_int_eq(from_forged(q, n, &x), SIVE_E_FORMAT);
    free(q);
    sive_free(bytes);
    sive_result_free(r);
}
END_TEST

/* sive_result_bytes_options() (experimental) lists a file's option
 * records without loading it: this library's own (every option of the
 * table, flagged ignorable at its default), an unknown one that makes the
 * load fail, and a format-3 file's options by position. */
START_TEST(bytes_options_lists_records)
{
    sive_result *r = run_range(2, 3, 11, theta_star);
    void *bytes = NULL;
    size_t n = 0, cnt = 0, k = 0;
    ck_assert_int_eq(sive_result_to_bytes(r, NULL, &bytes, &n), SIVE_OK);
    while (sive_option_at(k))
        k++;
    sive_option_record rec[64];
    ck_assert_uint_lt(k + 1, 64);
    ck_assert_int_eq(sive_result_bytes_options(bytes, n, NULL, 0, &cnt), SIVE_OK);
    ck_assert_uint_eq(cnt, k);
    ck_assert_int_eq(sive_result_bytes_options(bytes, n, rec, 64, &cnt), SIVE_OK);
    for (size_t i = 0; i < k; i++) {
        const sive_option_info *in = sive_option_at(i);
        ck_assert_int_eq(rec[i].id, in->id);
        ck_assert_int_eq(rec[i].type, in->type);
        ck_assert_int_eq(rec[i].known, 1);
        int64_t iv = 0;
        double dv = 0.0;
        if (in->type == SIVE_TYPE_INT) {
            sive_result_option_int(r, in->id, &iv);
            ck_assert_int_eq(rec[i].int_value, iv);
            ck_assert_int_eq(rec[i].ignorable,
                             iv == int_without(in));
        } else {
            sive_result_option_double(r, in->id, &dv);
            ck_assert((isnan(dv) && isnan(rec[i].double_value)) || same(dv, rec[i].double_value));
        }
    }
    /* an unknown option set away from its default: the load refuses, the
     * listing names it; a short out[] gets the first cap records */
    /* above every id of the table (experimental ones included), so it is
     * listed last */
    unsigned char *q = with_record(bytes, n, 4000, SIVE_TYPE_INT, 0, 7);
    sive_result *x = NULL;
    ck_assert_int_eq(sive_result_from_bytes(q, n + 16, &x, NULL), SIVE_E_FORMAT);
    ck_assert_int_eq(sive_result_bytes_options(q, n + 16, rec, 64, &cnt), SIVE_OK);
    ck_assert_uint_eq(cnt, k + 1);
    ck_assert_int_eq(rec[k].id, 4000);
    ck_assert_int_eq(rec[k].known, 0);
    ck_assert_int_eq(rec[k].ignorable, 0);
    ck_assert_int_eq(rec[k].int_value, 7);
    rec[2].id = -1;
    ck_assert_int_eq(sive_result_bytes_options(q, n + 16, rec, 2, &cnt), SIVE_OK);
    ck_assert_uint_eq(cnt, k + 1);
    ck_assert_int_eq(rec[2].id, -1);
    /* errors: NULL, damage, a malformed record */
    ck_assert_int_eq(sive_result_bytes_options(q, n + 16, rec, 2, NULL), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_result_bytes_options(q, n + 16, NULL, 2, &cnt), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_result_bytes_options(NULL, 5, rec, 2, &cnt), SIVE_E_INVALID_ARG);
    q[n / 2] ^= 1;
    ck_assert_int_eq(sive_result_bytes_options(q, n + 16, rec, 64, &cnt), SIVE_E_FORMAT);
    ck_assert_uint_eq(cnt, 0);
    q[n / 2] ^= 1;
    put64(q, sres_record(q, SIVE_OPT_STEPS), SIVE_OPT_T | (uint64_t)SIVE_TYPE_DOUBLE << 32);
    ck_assert_int_eq(from_forged(q, n + 16, &x), SIVE_E_FORMAT);
    ck_assert_int_eq(sive_result_bytes_options(q, n + 16, rec, 64, &cnt), SIVE_E_FORMAT);
    free(q);
    /* format 3: the options by position */
    size_t n3;
    unsigned char *p3 = read_all(SIVE_TEST_DATA_DIR "/result_v3.sres", &n3);
    ck_assert_int_eq(sive_result_bytes_options(p3, n3, rec, 64, &cnt), SIVE_OK);
    ck_assert_uint_eq(cnt, k);
    for (size_t i = 0; i < k; i++) {
        ck_assert_int_eq(rec[i].id, sive_option_at(i)->id);
        if (rec[i].id == SIVE_OPT_STEPS)
            ck_assert_int_eq(rec[i].int_value, 60);
        if (rec[i].id == SIVE_OPT_SEED)
            ck_assert_int_eq(rec[i].int_value, 11);
        if (rec[i].id == SIVE_OPT_T)
            ck_assert(rec[i].double_value == 10.0 && !rec[i].ignorable);
        if (rec[i].id == SIVE_OPT_CONTROL_VARIATE)
            ck_assert(rec[i].int_value == 0 && rec[i].ignorable);
    }
    free(p3);
    sive_free(bytes);
    sive_result_free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("result_file");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, split_merge_is_whole);
    tcase_add_test(tc, merge_refuses_misfits);
    tcase_add_test(tc, bad_range_is_refused);
    tcase_add_test(tc, file_round_trip);
    tcase_add_test(tc, bytes_round_trip);
    tcase_add_test(tc, damage_is_refused);
    tcase_add_test(tc, header_sizes_are_checked_first);
    tcase_add_test(tc, status_agrees_with_chains);
    tcase_add_test(tc, nan_estimate_stays_nan);
    tcase_add_test(tc, dtype_mismatch_is_named);
    tcase_add_test(tc, dtype_is_kept);
    tcase_add_test(tc, header_before_payload_no_fifo);
    tcase_add_test(tc, merge_memory_is_linear);
    tcase_add_test(tc, identity_is_checked);
    tcase_add_test(tc, old_formats_load);
    tcase_add_test(tc, options_round_trip);
    tcase_add_test(tc, unknown_option_rule);
    tcase_add_test(tc, bytes_options_lists_records);
    tcase_add_test(tc, run_notes_round_trip);
    tcase_add_test(tc, run_notes_checked);
    tcase_add_test(tc, format4_without_notes);
    tcase_add_test(tc, merge_keeps_notes);
    tcase_add_test(tc, remerge_tags_once);
    tcase_add_test(tc, radius_from_earlier_result);
    tcase_add_test(tc, radius_from_failure_keeps_radius);
    tcase_add_test(tc, long_run_notes_load);
    suite_add_tcase(s, tc);
    return check_run(s);
}
