/* The radius check (experimental radius_check, docs/theory.md "Radius
 * from the loss", *Checking a radius that was set*), on Gaussian tethered
 * laws known exactly at any h: K = sum_i k_i w_i^2 / 2 at theta* = 0,
 * t = 1e4, metropolis 1 with one layer-block Newton move per step (one
 * block with exact factors: each move an exact draw, so every direction
 * mixes at every radius), h = 0.04 set.  lambda(h) = sum_i (1/2) / (1 +
 * 1/(k_i t h^2))^2.  Ten stiff directions (k = 18) sit on their plateau
 * at 0.04 (4.965 of 5; +0.7 % at 4h); four soft ones at scale s, k =
 * 1/(t s^2):
 *  - rise: s = 0.16 = 4h.  lambda reads +2.0 % at 2h and +10.6 % at 4h,
 *    while its local slope at h is 0.019, far below radius_bound's 0.1:
 *    the check must raise radius_bound with its line, its paired change
 *    must agree with the exact one within 4 of its SEs, and a saved and
 *    loaded result must carry the flag again (from the note);
 *  - plateau: s = 4 (100 h): +0.7 % at 4h: no flag, the line says so, and
 *    the pilots' change agrees with the exact one within 4 SEs;
 *  - bits: the run with radius_check 0 and 1 has the same chains bit for
 *    bit (the pilots are runs of their own);
 *  - auto: 1 with metropolis 1 and h set; 0 with c_h auto, with metropolis
 *    auto and h set (ULA: the mini-batch path, e.g. the CLI's MLP, whose
 *    metropolis "auto" resolves to 0 in any case), and with metropolis 0. */
#define SIVE_EXPERIMENTAL /* SIVE_OPT_RADIUS_CHECK, SIVE_OPT_KRON_EVERY */
#include <check.h>
#include "quad.h"

#include <sive/sive.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check_run.h"

#define N_STIFF 10
#define N_SOFT 4
#define DIM (N_STIFF + N_SOFT)
#define K_STIFF 18.0
#define T 1e4
#define H 0.04

static double soft_scale; /* s of the soft directions (each test sets it) */

static double k_of(size_t i)
{
    return i < N_STIFF ? K_STIFF : 1.0 / (T * soft_scale * soft_scale);
}

static double law(double h)
{
    double v = 0.0;
    for (size_t i = 0; i < DIM; i++) {
        const double q = 1.0 + 1.0 / (k_of(i) * T * h * h);
        v += 0.5 / (q * q);
    }
    return v;
}

static double loss_at(const double *x, double *g)
{
    double l = 0.0;
    for (size_t i = 0; i < DIM; i++) {
        l += 0.5 * k_of(i) * x[i] * x[i];
        if (g)
            g[i] = k_of(i) * x[i];
    }
    return l;
}

static int q_loss(const void *th, size_t dim, const sive_batch *b, double *out, void *u)
{
    (void)dim, (void)u;
    const double l = loss_at(th, NULL);
    for (size_t k = 0; k < b->n_groups; k++)
        out[k] = l;
    return 0;
}

static int q_grad(const void *th, size_t dim, const sive_batch *b, void *g, double *l, void *u)
{
    (void)dim, (void)b, (void)u;
    *l = loss_at(th, g);
    return 0;
}

/* the loss's Hessian diag k as Kronecker roots (test/quad.h) */
static int q_curv(const sive_curvature_info *info, const void *theta, double *g_root,
                  double *a_root, void *u)
{
    (void)info, (void)theta, (void)u;
    quad_diag_roots(DIM, k_of, g_root, a_root);
    return 0;
}

static sive_model model(void)
{
    static const sive_block block = {.offset = 0, .rows = 1, .cols = DIM, .g_rows = 1,
                                     .a_rows = DIM};
    sive_model m;
    sive_model_init(&m, sizeof m);
    m.dim = DIM;
    m.dtype = SIVE_F64;
    m.group_loss = q_loss;
    m.grad = q_grad;
    m.n_blocks = 1;
    m.blocks = &block;
    m.curvature = q_curv;
    return m;
}

/* metropolis and radius as given (NULL: left unset), t, 20 000 steps,
 * 4 chains, seed 7 */
static sive_probe *probe(const char *metropolis, const char *radius, const char *value)
{
    sive_probe *p;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    if (metropolis)
        ck_assert_int_eq(sive_probe_set_text(p, "metropolis", metropolis), SIVE_OK);
    if (radius)
        ck_assert_int_eq(sive_probe_set_text(p, radius, value), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, T), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 20000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 7), SIVE_OK);
    return p;
}

static sive_result *run(sive_probe *p)
{
    const sive_model m = model();
    const double zero[DIM] = {0};
    sive_result *r = NULL;
    const int rc = sive_probe_run(p, &m, zero, &r);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    return r;
}

/* The last paired change the check's line gives: its percent, SE and h. */
static void last_change(const char *health, double *rel, double *se, double *h)
{
    const char *line = strstr(health, "radius_check: ");
    ck_assert_ptr_nonnull(line);
    int n = 0;
    for (const char *s = line; (s = strstr(s, " % +- ")) && s < strchr(line, '\n'); s++) {
        const char *b = s;
        while (b > line && b[-1] != ' ')
            b--;
        ck_assert_int_eq(sscanf(b, "%lf %% +- %lf %% at h = %lf", rel, se, h), 3);
        n++;
    }
    ck_assert_msg(n > 0, "no paired change in: %s", line);
}

static int64_t opt_int(const sive_result *r, sive_option o)
{
    int64_t v = -2;
    ck_assert_int_eq(sive_result_option_int(r, o, &v), SIVE_OK);
    return v;
}

/* The run at h = H with the soft directions at scale s (metropolis 1, h
 * set: the check on by auto), and its check's last paired change, which
 * must agree with the exact law's within 4 of its SEs (the line rounds
 * both to 0.1 %); *h the last pilot's radius. */
static sive_result *checked_run(const char *what, double s, sive_probe **p, double *h)
{
    soft_scale = s;
    *p = probe("1", "h", "0.04");
    sive_result *r = run(*p);
    const char *health = sive_result_health(r);
    const double lam = sive_result_lambda(r), mcse = sive_result_mcse(r);
    const double e = sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H, SIVE_SUMMARY) / lam;
    double rel, se;
    last_change(health, &rel, &se, h);
    const double exact = 100.0 * (law(*h) / law(H) - 1.0);
    printf("%s: lambda-hat %.4f +- %.4f (exact %.4f), own slope %.3f; check %+.1f %% +- %.1f %% "
           "at h = %.4g (exact %+.1f %%)\n%s",
           what, lam, mcse, law(H), e, rel, se, *h, exact, health);
    ck_assert_int_eq(opt_int(r, SIVE_OPT_RADIUS_CHECK), 1);
    ck_assert(fabs(lam - law(H)) < 4.0 * mcse);
    ck_assert_msg(fabs(rel - exact) < 4.0 * (se + 0.05) + 0.05,
                  "paired %+.2f %% +- %.2f, exact %+.2f %%", rel, se, exact);
    return r;
}

START_TEST(rise)
{
    sive_probe *p;
    double h;
    sive_result *r = checked_run("rise", 4.0 * H, &p, &h);
    const char *health = sive_result_health(r);
    const double lam = sive_result_lambda(r);
    /* the design: a cut the local slope cannot see, a rise beyond the band */
    ck_assert(law(4 * H) > 1.08 * law(H));
    ck_assert_ptr_nonnull(strstr(health, "radius_check: radius_bound: "));
    ck_assert(sive_result_flags(r) & SIVE_FLAG_RADIUS_BOUND);
    ck_assert_ptr_null(strstr(health, "radius_bound: d ln lambda-hat")); /* not the slope's */
    /* saved and loaded: the flag again, from the note */
    char path[] = "/tmp/sive_radius_check_XXXXXX";
    const int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    ck_assert_int_eq(sive_result_save(r, path, NULL), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_load(path, &back, NULL), SIVE_OK);
    unlink(path);
    ck_assert(sive_result_flags(back) == sive_result_flags(r));
    ck_assert(sive_result_lambda(back) == lam);
    sive_result_free(back);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(plateau)
{
    sive_probe *p;
    double h;
    sive_result *r = checked_run("plateau", 100.0 * H, &p, &h);
    const char *health = sive_result_health(r);
    ck_assert(law(4 * H) < 1.01 * law(H));
    ck_assert_ptr_nonnull(strstr(health, "no rise beyond the plateau band (4 %) resolved"));
    ck_assert(!(sive_result_flags(r) & SIVE_FLAG_RADIUS_BOUND));
    ck_assert_msg(fabs(h / (4 * H) - 1.0) < 1e-3, "last pilot at h = %g, not 4h", h);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(bits)
{
    soft_scale = 4.0 * H;
    sive_probe *p = probe("1", "h", "0.04");
    sive_result *on = run(p);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_RADIUS_CHECK, 0), SIVE_OK);
    sive_result *off = run(p);
    ck_assert_int_eq(opt_int(off, SIVE_OPT_RADIUS_CHECK), 0);
    ck_assert_ptr_null(strstr(sive_result_health(off), "radius_check"));
    for (int32_t c = 0; c < 4; c++)
        for (int s = 0; s < SIVE_STAT_DLAMBDA_DLOG_H_SE + 1; s++) {
            const double a = sive_result_stat(on, (sive_stat)s, c),
                         b = sive_result_stat(off, (sive_stat)s, c);
            ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "chain %d stat %d: %.17g vs %.17g",
                          (int)c, s, a, b);
        }
    const double a = sive_result_lambda(on), b = sive_result_lambda(off);
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
    ck_assert(sive_result_mcse(on) == sive_result_mcse(off));
    /* only the check's flag differs */
    ck_assert((sive_result_flags(on) & ~SIVE_FLAG_RADIUS_BOUND) == sive_result_flags(off));
    sive_result_free(on);
    sive_result_free(off);
    sive_probe_free(p);
}
END_TEST

START_TEST(auto_rule)
{
    soft_scale = 4.0 * H;
    static const struct {
        const char *metropolis, *radius, *value;
        int64_t want;
    } cases[] = {
        {"1", "h", "0.04", 1},    /* the case: metropolis 1, a radius set */
        {"1", "c_h", "auto", 0},  /* the search looks past its plateau itself */
        {NULL, "h", "0.04", 0},   /* metropolis auto with h set: ULA */
        {"0", "h", "0.04", 0},    /* ULA */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sive_probe *p = probe(cases[i].metropolis, cases[i].radius, cases[i].value);
        int64_t v = 0;
        ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_RADIUS_CHECK, &v), SIVE_OK);
        ck_assert_int_eq(v, -1);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 6000), SIVE_OK);
        sive_result *r = run(p);
        ck_assert_msg(opt_int(r, SIVE_OPT_RADIUS_CHECK) == cases[i].want, "case %zu", i);
        ck_assert_msg((strstr(sive_result_health(r), "radius_check: ") != NULL) == cases[i].want,
                      "case %zu: %s", i, sive_result_health(r));
        sive_result_free(r);
        sive_probe_free(p);
    }
    /* set on with c_h auto: no effect (the search's own pilots) */
    sive_probe *p = probe("1", "c_h", "auto");
    ck_assert_int_eq(sive_probe_set_text(p, "radius_check", "1"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 6000), SIVE_OK);
    sive_result *r = run(p);
    ck_assert_ptr_null(strstr(sive_result_health(r), "radius_check: "));
    sive_result_free(r);
    ck_assert_int_eq(sive_probe_set_text(p, "radius_check", "auto"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_RADIUS_CHECK, 2), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("radius_check");
    TCase *tc = tcase_create("exact");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, rise);
    tcase_add_test(tc, plateau);
    tcase_add_test(tc, bits);
    tcase_add_test(tc, auto_rule);
    suite_add_tcase(s, tc);
    return check_run(s);
}
