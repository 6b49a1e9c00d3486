/* The default sampler and radius (issue 18, part 3; docs/guide.md
 * "Defaults"): SIVE_OPT_METROPOLIS = -1 ("auto") resolved by every run.
 *  - an exact-loss model (the tethered quadratic of quad.h, whose gradient
 *    callback stores the loss; and full-batch least squares) with none of
 *    h, c_h, metropolis set runs metropolis 1 with c_h = auto, bit for bit
 *    the run with those two set, and its result (and result file) holds
 *    the resolved values, its health text the line saying why;
 *  - the same model with c_h = 1 (or h) set runs ULA: main's (0.2's) path,
 *    bit for bit the values recorded below;
 *  - a mini-batch model (least squares, grad_batch < n) and a model that
 *    stores no loss keep the 0.2 defaults (ULA, c_h = 1), the former bit
 *    for bit as recorded;
 *  - what the option queries return: the table's default and bounds, the
 *    probe's -1 ("auto" as text), the result's resolved value.
 * The recorded values were printed ("%a") by this file's `print` mode
 * built against main 1355413 (before the change). */
#include <check.h>
#include <sive/sive.h>
#define SIVE_EXPERIMENTAL
#include <sive/experimental.h>

#include "check_run.h"
#include "lsq.h"
#include "quad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double QSTAR[3] = {0.5, -0.25, 1.0};

/* The quadratic (Hessian 2 I, evaluation noise 0.05), 3 parameters. */
static quad_fixture qf = {.k = 2.0, .l0 = 1.0, .sigma = 0.05};

/* The common options: none of h, c_h, metropolis. */
static sive_probe *base_probe(int64_t steps)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 1827), SIVE_OK);
    return p;
}

static sive_result *run_ok(sive_probe *p, const sive_model *m, const void *star)
{
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, m, star, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_msg(sive_result_status(r) == SIVE_OK, "%s", sive_result_errmsg(r));
    return r;
}

/* The quadratic with extra options as text pairs (NULL-terminated). */
static sive_result *quad_run(int64_t steps, const char *const *set)
{
    sive_model m = quad_fixture_model(&qf, 3);
    sive_probe *p = base_probe(steps);
    for (; set && set[0]; set += 2)
        ck_assert_msg(sive_probe_set_text(p, set[0], set[1]) == SIVE_OK, "%s",
                      sive_probe_errmsg(p));
    sive_result *r = run_ok(p, &m, QSTAR);
    sive_probe_free(p);
    return r;
}

/* Least squares at STAR: batch 1 mini-batch (grad_batch 16, with
 * replacement), 0 full batch (grad_batch n, replacement 0). */
static lsq L;
static sive_result *lsq_defaults_run(int mini)
{
    lsq_make(&L, 5);
    L.batch_grad = 1;
    sive_model m;
    lsq_model(&m, &L);
    sive_probe *p = base_probe(mini ? 2000 : 1000);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, mini ? 16 : NEX), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, mini), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 8), SIVE_OK);
    sive_result *r = run_ok(p, &m, STAR);
    sive_probe_free(p);
    return r;
}

static void expect_bits(const char *what, double got, double want)
{
    ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "%s: %a, expected %a", what, got,
                  want);
}

static int64_t res_int(const sive_result *r, sive_option o)
{
    int64_t v = -7;
    ck_assert_int_eq(sive_result_option_int(r, o, &v), SIVE_OK);
    return v;
}

static double res_double(const sive_result *r, sive_option o)
{
    double v = -7.0;
    ck_assert_int_eq(sive_result_option_double(r, o, &v), SIVE_OK);
    return v;
}

/* main's lambda-hat and chain 0's unclipped SIVE (the `print` mode's). */
#define REF_QUAD_CH1_LAMBDA 0x1.a9e4ef57b4257p+0
#define REF_QUAD_CH1_CHAIN0 0x1.b669fa0e0115ap+0
#define REF_QUAD_H_LAMBDA 0x1.22659062b425p+1
#define REF_LSQ_MINI_LAMBDA 0x1.40f20615cd04p+0
#define REF_LSQ_MINI_CHAIN0 -0x1.b48ce43fe8b2p+1

/* The run took 0.2's path (ULA, c_h = 1) and says nothing of defaults. */
static void expect_02_path(const sive_result *r)
{
    ck_assert_int_eq(res_int(r, SIVE_OPT_METROPOLIS), 0);
    ck_assert(res_double(r, SIVE_OPT_C_H) == 1.0);
    ck_assert_int_eq(res_int(r, SIVE_OPT_KRON_EVERY), 0);
    ck_assert_int_eq(res_int(r, SIVE_OPT_RADIUS_LOOKAHEAD), 0);
    ck_assert_ptr_null(strstr(sive_result_health(r), "defaults:"));
}

/* The defaults chose the exact sampler with the radius from the loss. */
static void expect_resolved(const sive_result *r)
{
    ck_assert_int_eq(res_int(r, SIVE_OPT_METROPOLIS), 1);
    ck_assert(res_double(r, SIVE_OPT_C_H) == 0.0);
    ck_assert_int_eq(res_int(r, SIVE_OPT_RADIUS_LOOKAHEAD), 8);
}

static const char *const CH1[] = {"c_h", "1", NULL};
static const char *const H03[] = {"h", "0.3", NULL};
static const char *const EXPLICIT[] = {"metropolis", "1", "c_h", "auto",
                                       "radius_lookahead", "8", NULL};

/* (a) the exact-loss quadratic, nothing set: metropolis 1, c_h auto and
 * radius_lookahead 8 (no curvature: kron_every 0),
 * the same bits as when they are set. */
START_TEST(exact_defaults_resolve)
{
    sive_result *r = quad_run(2000, NULL);
    expect_resolved(r);
    ck_assert(isnan(res_double(r, SIVE_OPT_H)));
    const char *health = sive_result_health(r);
    ck_assert_msg(strstr(health, "defaults: metropolis 1 and c_h = auto") != NULL, "%s",
                  health);
    ck_assert_msg(strstr(health, "radius: chosen from the loss") != NULL, "%s", health);
    sive_result *e = quad_run(2000, EXPLICIT);
    expect_bits("lambda-hat, defaults against metropolis 1 + c_h auto set",
                sive_result_lambda(r), sive_result_lambda(e));
    expect_bits("radius", sive_result_stat(r, SIVE_STAT_H, SIVE_SUMMARY),
                sive_result_stat(e, SIVE_STAT_H, SIVE_SUMMARY));
    ck_assert_ptr_null(strstr(sive_result_health(e), "defaults:"));
    /* the file keeps the resolved values */
    void *bytes = NULL;
    size_t len = 0;
    ck_assert_int_eq(sive_result_to_bytes(r, NULL, &bytes, &len), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    ck_assert_int_eq(res_int(back, SIVE_OPT_METROPOLIS), 1);
    ck_assert(res_double(back, SIVE_OPT_C_H) == 0.0);
    expect_bits("lambda-hat from the file", sive_result_lambda(back), sive_result_lambda(r));
    sive_result_free(back);
    sive_free(bytes);
    printf("quadratic, defaults: lambda-hat %.5f at h %.4g\n%s", sive_result_lambda(r),
           sive_result_stat(r, SIVE_STAT_H, SIVE_SUMMARY), health);
    sive_result_free(e);
    sive_result_free(r);
}
END_TEST

/* theta* = 0: the adaptive radius refuses it, the defaults do not. */
START_TEST(exact_defaults_at_zero)
{
    sive_model m = quad_fixture_model(&qf, 3);
    sive_probe *p = base_probe(1000);
    const double zero[3] = {0.0, 0.0, 0.0};
    sive_result *r = run_ok(p, &m, zero);
    ck_assert_int_eq(res_int(r, SIVE_OPT_METROPOLIS), 1);
    ck_assert(sive_result_stat(r, SIVE_STAT_H, SIVE_SUMMARY) > 0.0);
    sive_result_free(r);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_C_H, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, zero, &r), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

/* (b) the same model with a radius set: ULA, main's bits. */
START_TEST(radius_set_is_02_path)
{
    sive_result *r = quad_run(2000, CH1);
    expect_02_path(r);
    expect_bits("lambda-hat at c_h = 1 against main", sive_result_lambda(r),
                REF_QUAD_CH1_LAMBDA);
    expect_bits("chain 0 at c_h = 1 against main",
                sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, 0), REF_QUAD_CH1_CHAIN0);
    static const char *const ULA[] = {"c_h", "1", "metropolis", "0", NULL};
    sive_result *u = quad_run(2000, ULA);
    expect_bits("lambda-hat, metropolis 0 set too", sive_result_lambda(u),
                sive_result_lambda(r));
    sive_result_free(u);
    sive_result_free(r);
    r = quad_run(2000, H03);
    ck_assert_int_eq(res_int(r, SIVE_OPT_METROPOLIS), 0);
    expect_bits("lambda-hat at h = 0.3 against main", sive_result_lambda(r),
                REF_QUAD_H_LAMBDA);
    sive_result_free(r);
    /* metropolis set alone: c_h stays 1 (main's path for that setting) */
    static const char *const M1[] = {"metropolis", "1", NULL};
    r = quad_run(2000, M1);
    ck_assert(res_double(r, SIVE_OPT_C_H) == 1.0);
    ck_assert_ptr_null(strstr(sive_result_health(r), "radius: chosen"));
    sive_result_free(r);
}
END_TEST

/* (c) a mini-batch model: the 0.2 defaults, main's bits, 0.2's health
 * text (no "defaults:" line: a loaded or merged result reads the same). */
START_TEST(minibatch_unchanged)
{
    sive_result *r = lsq_defaults_run(1);
    expect_02_path(r);
    expect_bits("lambda-hat, mini-batch defaults against main", sive_result_lambda(r),
                REF_LSQ_MINI_LAMBDA);
    expect_bits("chain 0, mini-batch defaults against main",
                sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, 0), REF_LSQ_MINI_CHAIN0);
    sive_result_free(r);
}
END_TEST

/* The full batch without replacement is exact: metropolis. */
START_TEST(full_batch_resolves)
{
    sive_result *r = lsq_defaults_run(0);
    expect_resolved(r);
    ck_assert_msg(strstr(sive_result_health(r), "full batch without replacement") != NULL,
                  "%s", sive_result_health(r));
    sive_result_free(r);
}
END_TEST

/* A gradient callback that stores no loss: not exact. */
static int grad_no_loss(const void *theta, size_t d, const sive_batch *b, void *grad,
                        double *loss, void *user)
{
    (void)loss;
    return quad_fixture_grad(theta, d, b, grad, &(double){0.0}, user);
}

START_TEST(no_loss_unchanged)
{
    sive_model m = quad_fixture_model(&qf, 3);
    m.grad = grad_no_loss;
    sive_probe *p = base_probe(1000);
    sive_result *r = run_ok(p, &m, QSTAR);
    expect_02_path(r);
    sive_result_free(r);
    /* step_extrapolate (refused by metropolis) on the exact model: ULA */
    m.grad = quad_fixture_grad;
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEP_EXTRAPOLATE, 1), SIVE_OK);
    r = run_ok(p, &m, QSTAR);
    ck_assert_int_eq(res_int(r, SIVE_OPT_METROPOLIS), 0);
    ck_assert(isfinite(sive_result_stat(r, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY)));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A callback that draws gradient noise from batch->seed (a stochastic
 * gradient in population mode) stores a finite loss but is not exact. */
static int grad_seeded(const void *theta, size_t d, const sive_batch *b, void *grad,
                       double *loss, void *user)
{
    int rc = quad_fixture_grad(theta, d, b, grad, loss, user);
    ((double *)grad)[0] += 1e-3 * (double)(b->seed % 1024u);
    return rc;
}

START_TEST(seeded_gradient_unchanged)
{
    sive_model m = quad_fixture_model(&qf, 3);
    m.grad = grad_seeded;
    sive_probe *p = base_probe(1000);
    sive_result *r = run_ok(p, &m, QSTAR);
    expect_02_path(r);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* An experimental sampler option of the exact sampler (leapfrog,
 * auto_step) set alone leaves the defaults to choose it: metropolis 1,
 * c_h auto. */
START_TEST(leapfrog_alone_resolves)
{
    static const char *const LF[] = {"leapfrog", "4", NULL}, *const AS[] = {"auto_step", "2",
                                                                            NULL};
    for (int k = 0; k < 2; k++) {
        sive_result *r = quad_run(1000, k ? AS : LF);
        expect_resolved(r);
        sive_result_free(r);
    }
}
END_TEST

/* The gradient calls at theta* (chain -1, step -1): counted. */
static int star_calls;
static int grad_counted(const void *theta, size_t d, const sive_batch *b, void *grad,
                        double *loss, void *user)
{
    star_calls += b->chain == -1 && b->step == -1;
    return quad_fixture_grad(theta, d, b, grad, loss, user);
}

/* The defaults' two exact calls at theta* are the only ones of the run:
 * the sampler's check (the same call) is not repeated by its pilots or
 * its chains' run; with metropolis set the sampler checks each run. */
START_TEST(star_calls_once)
{
    sive_model m = quad_fixture_model(&qf, 3);
    m.grad = grad_counted;
    sive_probe *p = base_probe(1000);
    star_calls = 0;
    sive_result *r = run_ok(p, &m, QSTAR);
    expect_resolved(r);
    ck_assert_int_eq(star_calls, 2);
    sive_result_free(r);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_METROPOLIS, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 0.3), SIVE_OK);
    star_calls = 0;
    r = run_ok(p, &m, QSTAR);
    ck_assert_int_eq(star_calls, 1);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A split run on the exact-loss model with the defaults: every part
 * resolves the defaults and searches the radius itself (the pilots and
 * the full-length continuation run all chains whatever the part's range),
 * so each part has the whole run's h, and the merged parts are the whole
 * run bit for bit (docs/scale.md). */
/* The line of text s that starts with prefix, with its newline ("" when
 * none), into buf. */
static const char *line_of(const char *s, const char *prefix, char *buf, size_t len)
{
    buf[0] = '\0';
    for (const char *l = s; *l;) {
        const size_t n = strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n');
        if (!strncmp(l, prefix, strlen(prefix)) && n < len) {
            memcpy(buf, l, n);
            buf[n] = '\0';
            break;
        }
        l += n;
    }
    return buf;
}

/* The merged result of the parts of a split run is the whole run's, its
 * health text too but for the lines that summarise a part's chains: the
 * "defaults:" and "radius:" lines are the whole run's verbatim (a part's
 * radius line counts the search as the whole run's does), the
 * "metropolis:" line is listed per part. */
static void expect_merged(const sive_result *whole, sive_result *const *part,
                          const char *what)
{
    sive_result *merged = NULL;
    ck_assert_int_eq(sive_result_merge(&merged, (const sive_result *const *)part, 2), SIVE_OK);
    expect_bits(what, sive_result_lambda(merged), sive_result_lambda(whole));
    expect_bits("merged h", sive_result_stat(merged, SIVE_STAT_H, SIVE_SUMMARY),
                sive_result_stat(whole, SIVE_STAT_H, SIVE_SUMMARY));
    for (int32_t c = 0; c < 3; c++)
        expect_bits("a chain's SIVE", sive_result_stat(merged, SIVE_STAT_SIVE_UNCLIPPED, c),
                    sive_result_stat(whole, SIVE_STAT_SIVE_UNCLIPPED, c));
    ck_assert_uint_eq(sive_result_flags(merged), sive_result_flags(whole));
    const char *hw = sive_result_health(whole), *hm = sive_result_health(merged);
    char flags[4096] = "", dl[1024], rl[1024];
    for (const char *l = hw; *l;) {
        const size_t n = strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n');
        if (strncmp(l, "metropolis:", 11) && strncmp(l, "defaults:", 9) &&
            strncmp(l, "radius:", 7))
            strncat(flags, l, n);
        l += n;
    }
    ck_assert_ptr_nonnull(strstr(hw, "\ndefaults: metropolis 1"));
    char want[8192];
    /* the flags' text, each part's metropolis line, then the whole run's
     * defaults and radius lines */
    char m0[1024], m1[1024];
    line_of(sive_result_health(part[0]), "metropolis: ", m0, sizeof m0);
    line_of(sive_result_health(part[1]), "metropolis: ", m1, sizeof m1);
    ck_assert(m0[0] && m1[0] && strcmp(m0, m1));
    snprintf(want, sizeof want, "%smetropolis (chains 0..0): %smetropolis (chains 1..2): %s%s%s",
             flags, m0 + strlen("metropolis: "), m1 + strlen("metropolis: "),
             line_of(hw, "defaults: ", dl, sizeof dl), line_of(hw, "radius: ", rl, sizeof rl));
    ck_assert(dl[0] && rl[0]);
    ck_assert_str_eq(hm, want);
    sive_result_free(merged);
}

START_TEST(exact_defaults_split)
{
    sive_model m = quad_fixture_model(&qf, 3);
    sive_probe *p = base_probe(2000);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 3), SIVE_OK);
    sive_result *whole = run_ok(p, &m, QSTAR), *part[2], *reused[2];
    expect_resolved(whole);
    const double h = sive_result_stat(whole, SIVE_STAT_H, 0);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, k), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, k ? 3 : 1), SIVE_OK);
        part[k] = run_ok(p, &m, QSTAR);
        /* per chain: the summary is a mean over the part's chains */
        expect_bits("a part's h", sive_result_stat(part[k], SIVE_STAT_H, k), h);
        /* the radius of the whole run, without the search: the same bits
         * and the same health text */
        ck_assert_int_eq(sive_probe_set_radius_from(p, whole), SIVE_OK);
        reused[k] = run_ok(p, &m, QSTAR);
        ck_assert_int_eq(sive_probe_set_radius_from(p, NULL), SIVE_OK);
        expect_bits("a reused part's lambda-hat", sive_result_lambda(reused[k]),
                    sive_result_lambda(part[k]));
        ck_assert_str_eq(sive_result_health(reused[k]), sive_result_health(part[k]));
    }
    expect_merged(whole, part, "merged lambda-hat");
    expect_merged(whole, reused, "merged lambda-hat (radius reused)");
    for (int k = 0; k < 2; k++) {
        sive_result_free(part[k]);
        sive_result_free(reused[k]);
    }
    sive_result_free(whole);
    sive_probe_free(p);
}
END_TEST

/* What the queries say about the default. */
START_TEST(queries)
{
    const sive_option_info *in = sive_option_info_get(SIVE_OPT_METROPOLIS);
    ck_assert_ptr_nonnull(in);
    ck_assert_int_eq(in->int_default, -1);
    ck_assert_int_eq(in->int_lo, -1);
    ck_assert_int_eq(in->int_hi, 1);
    in = sive_option_info_get(SIVE_OPT_C_H);
    ck_assert(in->double_default == 1.0);
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    int64_t v = 0;
    double c = 0.0;
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_METROPOLIS, &v), SIVE_OK);
    ck_assert_int_eq(v, -1);
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_C_H, &c), SIVE_OK);
    ck_assert(c == 1.0);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "AUTO"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_METROPOLIS, &v), SIVE_OK);
    ck_assert_int_eq(v, -1);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_METROPOLIS, -2), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_text(p, "c_h", "auto"), SIVE_OK);
    ck_assert_int_eq(sive_probe_reset(p), SIVE_OK); /* forgets the radius set */
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_METROPOLIS, &v), SIVE_OK);
    ck_assert_int_eq(v, -1);
    sive_probe_free(p);
}
END_TEST

/* `print`: the values the REF_ constants hold (run against main). */
START_TEST(print_refs)
{
    sive_result *r = quad_run(2000, CH1);
    printf("#define REF_QUAD_CH1_LAMBDA %a\n#define REF_QUAD_CH1_CHAIN0 %a\n",
           sive_result_lambda(r), sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, 0));
    sive_result_free(r);
    r = quad_run(2000, H03);
    printf("#define REF_QUAD_H_LAMBDA %a\n", sive_result_lambda(r));
    sive_result_free(r);
    r = lsq_defaults_run(1);
    printf("#define REF_LSQ_MINI_LAMBDA %a\n#define REF_LSQ_MINI_CHAIN0 %a\n",
           sive_result_lambda(r), sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, 0));
    sive_result_free(r);
}
END_TEST

int main(int argc, char **argv)
{
    Suite *s = suite_create("defaults");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    if (argc > 1 && !strcmp(argv[1], "print")) {
        tcase_add_test(tc, print_refs);
        suite_add_tcase(s, tc);
        return check_run(s);
    }
    tcase_add_test(tc, queries);
    tcase_add_test(tc, exact_defaults_resolve);
    tcase_add_test(tc, exact_defaults_at_zero);
    tcase_add_test(tc, radius_set_is_02_path);
    tcase_add_test(tc, minibatch_unchanged);
    tcase_add_test(tc, full_batch_resolves);
    tcase_add_test(tc, no_loss_unchanged);
    tcase_add_test(tc, seeded_gradient_unchanged);
    tcase_add_test(tc, leapfrog_alone_resolves);
    tcase_add_test(tc, star_calls_once);
    tcase_add_test(tc, exact_defaults_split);
    suite_add_tcase(s, tc);
    return check_run(s);
}
