/* The ground-truth suite: cases, the t each one needs, the exact targets
 * and one probe run per case (tools/truth.h, docs/validation.md). */
#include "truth.h"

#include <sive/dln.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DLN(name_, L_, r_, n_, q_, ...)                                      \
    {.name = name_, .kind = TRUTH_DLN, .layers = L_, .rank = r_, .n = n_,  \
     .quick = q_, .widths = {__VA_ARGS__}}
#define MONO(name_, d_, q_, ...)                                             \
    {.name = name_, .kind = TRUTH_MONO, .mono_d = d_, .quick = q_,         \
     .k = {__VA_ARGS__}, .nk = sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t)}

#define PROD(name_, blocks_, q_, ...)                                        \
    {.name = name_, .kind = TRUTH_PROD, .quick = q_, .k = {__VA_ARGS__},      \
     .nk = sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t),              \
     .mono_d = (blocks_) * (sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t))}

/* Depth 1 (regular) to 6, d from 54 to 104 832, ranks 0 to full, the
 * population loss and noiseless data, balanced and rescaled centres, and
 * the monomials. */
static const truth_case cases[] = {
    DLN("L1 10-10 r3", 1, 3, 0, 1, 10, 10),
    DLN("L2 5-6-4 r0", 2, 0, 0, 1, 5, 6, 4),
    DLN("L2 5-6-4 r2", 2, 2, 0, 1, 5, 6, 4),
    DLN("L2 5-6-4 r4 full", 2, 4, 0, 0, 5, 6, 4),
    DLN("L2 10-20-10 r3", 2, 3, 0, 0, 10, 20, 10),
    DLN("L2 10-20-10 r3 n2000", 2, 3, 2000, 0, 10, 20, 10),
    DLN("L2 100-50-100 r10", 2, 10, 0, 0, 100, 50, 100),
    DLN("L3 5-5-5-5 r0", 3, 0, 0, 0, 5, 5, 5, 5),
    DLN("L3 5-5-5-5 r5 full", 3, 5, 0, 0, 5, 5, 5, 5),
    DLN("L3 10-8-8-10 r2", 3, 2, 0, 1, 10, 8, 8, 10),
    {.name = "L3 10-8-8-10 r2 rescaled", .kind = TRUTH_DLN, .layers = 3, .rank = 2,
     .widths = {10, 8, 8, 10}, .scales = {2.0, 1.0, 0.5}},
    DLN("L3 20-30-30-20 r5", 3, 5, 0, 0, 20, 30, 30, 20),
    DLN("L3 20-30-30-20 r5 n2000", 3, 5, 2000, 0, 20, 30, 30, 20),
    DLN("L3 50-100-100-50 r25", 3, 25, 0, 0, 50, 100, 100, 50),
    DLN("L4 6-6-6-6-6 r0", 4, 0, 0, 0, 6, 6, 6, 6, 6),
    DLN("L4 6-6-6-6-6 r3", 4, 3, 0, 1, 6, 6, 6, 6, 6),
    DLN("L4 10-15-15-15-10 r6", 4, 6, 0, 0, 10, 15, 15, 15, 10),
    DLN("L4 10-224-224-224-10 r5", 4, 5, 0, 0, 10, 224, 224, 224, 10),
    DLN("L5 4-4-4-4-4-4 r0", 5, 0, 0, 0, 4, 4, 4, 4, 4, 4),
    DLN("L5 4-4-4-4-4-4 r4 full", 5, 4, 0, 0, 4, 4, 4, 4, 4, 4),
    DLN("L5 10-20-20-20-20-10 r5", 5, 5, 0, 1, 10, 20, 20, 20, 20, 10),
    DLN("L5 30-50-50-50-50-30 r10", 5, 10, 0, 0, 30, 50, 50, 50, 50, 30),
    DLN("L6 5-5-5-5-5-5-5 r2", 6, 2, 0, 1, 5, 5, 5, 5, 5, 5, 5),
    DLN("L6 8-12-12-12-12-12-8 r0", 6, 0, 0, 0, 8, 12, 12, 12, 12, 12, 8),
    DLN("L6 50x7 r10", 6, 10, 0, 0, 50, 50, 50, 50, 50, 50, 50),
    MONO("mono k1 x10", 10, 1, 1),
    MONO("mono k2 x10", 10, 1, 2),
    MONO("mono k3 x10", 10, 0, 3),
    MONO("mono k1,2,3 x30", 30, 0, 1, 2, 3),
    MONO("mono k2 x1000", 1000, 0, 2),
    /* products: blocks prod_i w_i^(2 k_i) (multiplicity 1 + blocks *
     * (ties at the min - 1)); exact finite-t targets by quadrature */
    PROD("prod u2v2 x5", 5, 0, 1, 1),
    PROD("prod u4v2 x5", 5, 0, 2, 1),
};
#undef DLN
#undef MONO
#undef PROD

const truth_case *truth_cases(size_t *n)
{
    *n = sizeof cases / sizeof cases[0];
    return cases;
}

const truth_case *truth_case_named(const char *name)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(cases[i].name, name))
            return &cases[i];
    return NULL;
}

void truth_settings_default(truth_settings *s)
{
    memset(s, 0, sizeof *s);
    s->t = NAN;
    s->h_zero = 1.0;
    s->seed = 1;
    s->threads = 1;
    s->data_n = -1;
}

double truth_theory_t(const truth_case *c)
{
    if (c->kind != TRUTH_DLN)
        return 1e4; /* t^2 Var of w^(2k) is 1/(2k) at every t */
    const double t = pow(9.0, (double)c->layers);
    return t > 1e4 ? t : 1e4;
}

/* Integrand of the tethered law of one coordinate, by its power p of
 * w^(2k) (p = 0, 1, 2); even in w, so integrated over [0, W]. */
double truth_mono_target(uint32_t k, double t, double h)
{
    const double scale = fmin(pow(t, -1.0 / (2.0 * k)), h);
    const double W = 12.0 * scale;
    const int n = 40000; /* Simpson, even n */
    double m[3] = {0, 0, 0};
    for (int i = 0; i <= n; i++) {
        const double w = W * i / n, f = pow(w, 2.0 * k);
        const double p = exp(-t * f - w * w / (2 * h * h));
        const double c = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
        m[0] += c * p;
        m[1] += c * p * f;
        m[2] += c * p * f * f;
    }
    const double mean = m[1] / m[0];
    return t * t * (m[2] / m[0] - mean * mean);
}

/* The u-integrand of E[K^p] for K = u^(2a) v, v = w^2: with A = t u^(2a)
 * + 1/(2h^2), int w^(2p) exp(-A w^2) dw over R = Gamma(p + 1/2)/A^(p+1/2);
 * integrated over u = e^s in [0, 14h] by Simpson in s (the law of u has
 * structure on every scale between t^(-1/(2a)) and h). */
double truth_prod_target(uint32_t a, uint32_t b, double t, double h)
{
    if (b != 1) {
        if (a != 1)
            return NAN;
        a = b; /* symmetric: the closed-form factor is the k = 1 one */
    }
    const double c = 1.0 / (2.0 * h * h);
    const double cross = fmin(h, pow(c / t, 1.0 / (2.0 * a))); /* t u^2a = c */
    const double s0 = log(cross) - 40.0, s1 = log(14.0 * h);
    const int n = 60000; /* even */
    const double ds = (s1 - s0) / n;
    double I[3] = {0, 0, 0};
    const double g[3] = {tgamma(0.5), tgamma(1.5), tgamma(2.5)};
    for (int i = 0; i <= n; i++) {
        const double u = exp(s0 + ds * i), f = pow(u, 2.0 * a), A = t * f + c;
        const double w = ((i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2)) * u *
                         exp(-u * u * c) / sqrt(A);
        I[0] += w * g[0];
        I[1] += w * g[1] * f / A;
        I[2] += w * g[2] * f * f / (A * A);
    }
    const double mean = I[1] / I[0];
    return t * t * (I[2] / I[0] - mean * mean);
}

double truth_prod_lambda(const uint32_t *k, size_t nk, size_t blocks, int64_t *mult)
{
    uint32_t kmax = 0;
    int ties = 0;
    for (size_t i = 0; i < nk; i++)
        if (k[i] > kmax)
            kmax = k[i], ties = 1;
        else if (k[i] == kmax)
            ties++;
    if (mult)
        *mult = 1 + (int64_t)blocks * (ties - 1);
    return kmax ? (double)blocks / (2.0 * kmax) : NAN;
}

/* K = sum over blocks of prod_{i < nk} w_i^(2 k_i), exact gradient, every
 * group the exact K (as sive_monomial_model()). */
typedef struct prod_model {
    size_t d, nk;
    uint32_t k[4];
} prod_model;

static double prod_k(const prod_model *pm, const double *w, double *grad)
{
    double sum = 0.0;
    for (size_t b = 0; b + pm->nk <= pm->d; b += pm->nk) {
        double f[4], all = 1.0;
        for (size_t i = 0; i < pm->nk; i++)
            all *= (f[i] = pow(w[b + i], 2.0 * pm->k[i]));
        sum += all;
        for (size_t i = 0; grad && i < pm->nk; i++) {
            double rest = 2.0 * pm->k[i] * pow(w[b + i], 2.0 * pm->k[i] - 1.0);
            for (size_t j = 0; j < pm->nk; j++)
                rest *= j == i ? 1.0 : f[j];
            grad[b + i] = rest;
        }
    }
    return sum;
}

static int prod_grad(const void *theta, size_t dim, const sive_batch *batch, void *grad,
                     double *loss, void *user)
{
    (void)batch;
    (void)dim;
    *loss = prod_k(user, theta, grad);
    return SIVE_OK;
}

static int prod_group(const void *theta, size_t dim, const sive_batch *batch,
                      double *group_loss, void *user)
{
    (void)dim;
    const double k = prod_k(user, theta, NULL);
    for (size_t g = 0; g < batch->n_groups; g++)
        group_loss[g] = k;
    return SIVE_OK;
}

/* The orbit move (sive_model.move; experimental orbit_every): a block b
 * drawn uniformly, log c = scale N(0, 1), w_{b,i} -> c^(e_i) w_{b,i} with
 * e = (k_1, -k_0) for two factors (u^(2k_0) v^(2k_1) is invariant), and
 * log |det| = (k_1 - k_0) log c; c and 1/c are equally likely.  Blocks of
 * another number of factors: theta unchanged. */
static int prod_move(const sive_move_info *info, const void *theta, void *out,
                     double *log_ratio, void *user)
{
    const prod_model *pm = user;
    const size_t dim = info->dim;
    const double scale = info->scale;
    const sive_batch *batch = info->batch;
    const double *w = theta;
    double *y = out, z;
    memcpy(y, w, dim * sizeof *y);
    *log_ratio = 0.0;
    if (pm->nk != 2)
        return SIVE_OK;
    sive_rng g;
    sive_rng_seed(&g, batch->seed, 0x6f72626974ULL);
    const size_t b = 2 * (size_t)sive_rng_below(&g, pm->d / 2);
    sive_rng_normals(&g, &z, 1);
    const double lc = scale * z;
    y[b] = w[b] * exp((double)pm->k[1] * lc);
    y[b + 1] = w[b + 1] * exp(-(double)pm->k[0] * lc);
    *log_ratio = ((double)pm->k[1] - (double)pm->k[0]) * lc;
    return SIVE_OK;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }

/* The probe with the suite's options; the radius mode of the user's. */
static int make_probe(const truth_settings *s, double t, sive_probe **p,
                      int *h_set, char *err, size_t errlen)
{
    int rc = sive_probe_new(p);
    if (rc)
        return rc;
    sive_probe_set_double(*p, SIVE_OPT_T, t);
    sive_probe_set_int(*p, SIVE_OPT_THREADS, s->threads);
    *h_set = 0;
    for (int i = 0; i < s->nsets && rc == SIVE_OK; i++) {
        char name[64];
        const char *eq = strchr(s->sets[i], '=');
        size_t len = eq ? (size_t)(eq - s->sets[i]) : 0;
        if (!eq || len >= sizeof name) {
            snprintf(err, errlen, "option '%s' is not name=value", s->sets[i]);
            rc = SIVE_E_INVALID_ARG;
            break;
        }
        memcpy(name, s->sets[i], len);
        name[len] = 0;
        if ((rc = sive_probe_set_text(*p, name, eq + 1)))
            snprintf(err, errlen, "%s", sive_probe_errmsg(*p));
        *h_set |= !strcmp(name, "h");
    }
    if (rc) {
        sive_probe_free(*p);
        *p = NULL;
    }
    return rc;
}

/* The model, theta* and lambda of a case; the caller frees *theta, *dln. */
static int make_case(const truth_case *c, const truth_settings *s, sive_model *m,
                     double **theta, sive_dln **dln, truth_row *row, char *err,
                     size_t errlen)
{
    int rc = sive_model_init(m, sizeof *m);
    *dln = NULL;
    if (c->kind == TRUTH_MONO) {
        uint32_t *k = malloc(c->mono_d * sizeof *k);
        *theta = calloc(c->mono_d, sizeof **theta);
        if (!k || !*theta) {
            free(k);
            return SIVE_E_NOMEM;
        }
        for (size_t i = 0; i < c->mono_d; i++)
            k[i] = c->k[i % c->nk];
        row->lambda = sive_monomial_lambda(k, c->mono_d);
        row->mult = 1;
        row->d = c->mono_d;
        rc = sive_monomial_model(m, k, c->mono_d);
        free(k);
    } else if (c->kind == TRUTH_PROD) {
        prod_model *pm = calloc(1, sizeof *pm);
        *theta = calloc(c->mono_d, sizeof **theta);
        if (!pm || !*theta) {
            free(pm);
            return SIVE_E_NOMEM;
        }
        pm->d = c->mono_d;
        pm->nk = c->nk;
        memcpy(pm->k, c->k, sizeof pm->k);
        row->d = c->mono_d;
        row->lambda = truth_prod_lambda(c->k, c->nk, c->mono_d / c->nk, &row->mult);
        m->dtype = SIVE_F64;
        m->dim = pm->d;
        m->grad = prod_grad;
        m->group_loss = prod_group;
        m->move = prod_move;
        m->user = pm;
        m->destroy = free;
    } else {
        double sv[256];
        for (size_t j = 0; j < c->rank && j < 256; j++)
            sv[j] = 1.0 + (double)j / (double)c->rank; /* in [1, 2) */
        if (!rc)
            rc = sive_dln_lambda(c->widths, c->layers, c->rank, &row->lambda, &row->mult);
        if (!rc)
            rc = sive_dln_new(dln, c->widths, c->layers, c->rank, sv, s->seed);
        row->n = s->data_n < 0 ? c->n : (uint64_t)s->data_n;
        if (!rc && row->n)
            rc = sive_dln_set_data(*dln, row->n, 0.0, s->seed + 1);
        row->d = sive_dln_dim(*dln);
        if (!rc && !(*theta = malloc(row->d * sizeof **theta)))
            rc = SIVE_E_NOMEM;
        if (!rc)
            rc = sive_dln_factorisation(*dln, c->scales[0] > 0 ? c->scales : NULL,
                                        s->seed + 2, *theta);
        if (!rc && s->dln_gibbs)
            rc = sive_dln_set_move(*dln, SIVE_DLN_MOVE_GIBBS);
        if (!rc)
            rc = sive_dln_model(m, *dln, 1);
    }
    if (rc)
        snprintf(err, errlen, "%s: %s", c->name, sive_last_errmsg());
    return rc;
}

/* The exact t^2 Var under the continuous tethered law, where known: the
 * monomials (quadrature) and the regular L = 1 population loss, a
 * quadratic of unit curvature: (d/2) (t v)^2, v = 1/(t + 1/h^2). */
static double target(const truth_case *c, const truth_row *row)
{
    if (c->kind == TRUTH_PROD)
        return c->nk == 2 ? (double)(c->mono_d / 2) *
                                truth_prod_target(c->k[0], c->k[1], row->t, row->h)
                          : NAN;
    if (c->kind == TRUTH_MONO) {
        double sum = 0.0;
        for (size_t j = 0; j < c->nk; j++) {
            size_t count = c->mono_d / c->nk + (j < c->mono_d % c->nk);
            sum += (double)count * truth_mono_target(c->k[j], row->t, row->h);
        }
        return sum;
    }
    if (c->layers == 1 && row->n == 0) {
        const double v = 1.0 / (row->t + 1.0 / (row->h * row->h));
        return 0.5 * (double)row->d * (row->t * v) * (row->t * v);
    }
    return NAN;
}

/* 1 when the run was refused because the relative radius is not positive:
 * the message of lib/core/probe.c's radius(), "adaptive radius h =
 * c_h*||theta*||/sqrt(d) = 0 is not positive (theta* is zero?)" (the
 * public API has no finer status; test_truth's fallback cases break if
 * the message changes). */
static int radius_refused(const sive_probe *p)
{
    const char *msg = sive_probe_errmsg(p);
    return strstr(msg, "adaptive radius h = c_h*") && strstr(msg, "is not positive (theta*");
}

int truth_run(const truth_case *c, const truth_settings *s, truth_row *row,
              char *err, size_t errlen)
{
    memset(row, 0, sizeof *row);
    row->t = isnan(s->t) ? truth_theory_t(c) : s->t;
    sive_probe *p = NULL;
    sive_model m;
    memset(&m, 0, sizeof m);
    double *theta = NULL;
    sive_dln *dln = NULL;
    sive_result *r = NULL;
    int h_set = 0;
    int rc = make_probe(s, row->t, &p, &h_set, err, errlen);
    if (!rc)
        rc = make_case(c, s, &m, &theta, &dln, row, err, errlen);
    const double t0 = now(), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    if (!rc) {
        double norm = 0.0;
        for (size_t i = 0; i < row->d; i++)
            norm += theta[i] * theta[i];
        /* The adaptive radius c_h*||theta*||/sqrt(d) refuses theta* = 0:
         * a run so refused falls back to h_zero (the radius from the loss,
         * c_h = 0 set or chosen by the defaults on an exact loss, needs no
         * fallback; the probe says which only by running).  Only that
         * refusal: any other setting the library refuses is reported. */
        rc = sive_probe_run(p, &m, theta, &r);
        if (rc == SIVE_E_INVALID_ARG && norm == 0.0 && !h_set && radius_refused(p)) {
            sive_probe_set_double(p, SIVE_OPT_H, s->h_zero);
            row->h_fallback = 1;
            rc = sive_probe_run(p, &m, theta, &r);
        }
        if (rc)
            snprintf(err, errlen, "%s: %s", c->name, sive_probe_errmsg(p));
        else if ((rc = sive_result_status(r)))
            snprintf(err, errlen, "%s: %s", c->name, sive_result_errmsg(r));
    }
    row->seconds = now() - t0;
    const double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    if (!rc) {
        row->h = sive_result_stat(r, SIVE_STAT_H, SIVE_SUMMARY);
        row->est = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
        row->mcse = sive_result_mcse(r);
        /* with step_extrapolate, lambda-hat is the step-0 value */
        const double e0 = sive_result_stat(r, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY);
        if (isfinite(e0)) {
            row->est = e0;
            row->mcse = sive_result_stat(r, SIVE_STAT_MCSE_STEP0, SIVE_SUMMARY);
        }
        row->flags = sive_result_flags(r);
        if (getenv("SIVE_TRUTH_HEALTH")) /* the health text, for diagnosis */
            fprintf(stderr, "%s:\n%sESS of Lbar %.1f, of SIVE %.1f; process CPU %.2f s\n",
                    c->name, sive_result_health(r),
                    sive_result_stat(r, SIVE_STAT_ESS, SIVE_SUMMARY),
                    sive_result_stat(r, SIVE_STAT_SIVE_ESS, SIVE_SUMMARY), cpu);
        row->target = target(c, row);
        row->rel = row->est / row->lambda - 1.0;
        row->z = (row->est - (isnan(row->target) ? row->lambda : row->target)) / row->mcse;
        if (s->inspect)
            s->inspect(r, row, s->inspect_ctx);
    }
    sive_result_free(r);
    sive_model_destroy(&m);
    sive_dln_free(dln);
    free(theta);
    sive_probe_free(p);
    return rc;
}
