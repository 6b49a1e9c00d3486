/* Do the health flags catch a wrong lambda-hat?  (issue 18, part 5)
 *
 * Models with an exact learning coefficient: sums of monomials
 * K(w) = sum_i c_i w_i^(2 k_i) centred at their minimum theta* = 0, whose
 * continuous-law value is t^2 Var K = sum_i 1/(2 k_i) for every t (each
 * term is homogeneous; flat directions, c_i = 0, add nothing), with
 * Gaussian evaluation noise sized so that the noise correction is 5 % of
 * lambda.  Each configuration runs at settings chosen to be right (h
 * eight times the largest fluctuation scale (t c_i)^(-1/(2 k_i)), a step
 * whose bias is ~2.5 %) and deliberately wrong (h 5x too small, h 5x too
 * large, base_lr 4x too large), over several seeds, and the program
 * counts: of the runs more than 10 % off, those with a flag other than
 * nonstationary / low_ess; of the runs within 5 %, those without any
 * flag.  Usage: bench_flags [seeds (8)] [steps (100000)]. */
#include <sive/sive.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 64

typedef struct cfg {
    const char *name;
    int d;
    int k[MAXD];
    double c[MAXD];
    double base_lr;
} cfg;

typedef struct model_ctx {
    const cfg *g;
    double sigma;
} model_ctx;

static double loss_of(const cfg *g, const double *w)
{
    double s = 0.0;
    for (int i = 0; i < g->d; i++)
        s += g->c[i] * pow(w[i], 2 * g->k[i]);
    return s;
}

static int grad_fn(const void *theta, size_t dim, const sive_batch *b, void *grad,
                   double *loss, void *user)
{
    const model_ctx *m = user;
    const double *w = theta;
    double *gr = grad;
    (void)dim;
    (void)b;
    for (int i = 0; i < m->g->d; i++) {
        int k = m->g->k[i];
        gr[i] = m->g->c[i] * 2 * k * pow(w[i], 2 * k - 1);
    }
    *loss = loss_of(m->g, w);
    return 0;
}

static int group_fn(const void *theta, size_t dim, const sive_batch *b, double *out,
                    void *user)
{
    const model_ctx *m = user;
    (void)dim;
    double k = loss_of(m->g, theta);
    sive_rng r;
    sive_rng_seed(&r, b->seed, 0);
    sive_rng_normals(&r, out, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        out[i] = 1.0 + k + m->sigma * out[i];
    return 0;
}

static double lambda_of(const cfg *g)
{
    double s = 0.0;
    for (int i = 0; i < g->d; i++)
        if (g->c[i] > 0.0)
            s += 1.0 / (2.0 * g->k[i]);
    return s;
}

/* Eight times the largest fluctuation scale of a confined direction. */
static double h_good(const cfg *g, double t)
{
    double s = 0.0;
    for (int i = 0; i < g->d; i++)
        if (g->c[i] > 0.0)
            s = fmax(s, pow(t * g->c[i], -1.0 / (2.0 * g->k[i])));
    return 8.0 * s;
}

#define T 1e4
#define N 16

static cfg configs[5];

static void make_configs(void)
{
    cfg *g = configs;
    /* K1 = u^2 */
    g[0] = (cfg){.name = "K1", .d = 1, .k = {1}, .c = {1.0}, .base_lr = 0.0125};
    /* t w^4: lambda 1/4 */
    g[1] = (cfg){.name = "w4", .d = 1, .k = {2}, .c = {T}, .base_lr = 0.003};
    /* u^2 + 4 v^2 + t w^4 + t x^6 */
    g[2] = (cfg){.name = "mixed", .d = 4, .k = {1, 1, 2, 3}, .c = {1.0, 4.0, T, T},
                 .base_lr = 0.003};
    /* 4 quadratic directions, curvature 2 .. 16, and 4 flat ones */
    g[3] = (cfg){.name = "flat8", .d = 8, .k = {1, 1, 1, 1, 1, 1, 1, 1},
                 .c = {1, 2, 4, 8, 0, 0, 0, 0}, .base_lr = 0.003};
    /* 8 quadratic directions of curvature 2 and 56 flat ones */
    g[4] = (cfg){.name = "flat64", .d = 64, .base_lr = 0.0125};
    for (int i = 0; i < 64; i++) {
        g[4].k[i] = 1;
        g[4].c[i] = i < 8 ? 1.0 : 0.0;
    }
}

static const char *setting_names[] = {"good", "h/5", "5h", "4a"};

static int acceptable(uint32_t f)
{
    return (f & ~(uint32_t)(SIVE_FLAG_NONSTATIONARY | SIVE_FLAG_LOW_ESS)) != 0;
}

static void names(uint32_t f, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int b = 0; b < 32; b++)
        if (f >> b & 1u) {
            size_t n = strlen(buf);
            snprintf(buf + n, len - n, "%s%s", n ? "," : "", sive_flag_name(1u << b));
        }
}

int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 8;
    int64_t steps = argc > 2 ? atoll(argv[2]) : 100000;
    make_configs();
    int off10 = 0, off10_flagged = 0, in5 = 0, in5_clean = 0, between = 0;
    printf("config setting seed lambda lambda_hat mcse rel_err z dlnlam_dlnh step_share flags\n");
    for (size_t ci = 0; ci < sizeof configs / sizeof configs[0]; ci++) {
        const cfg *g = &configs[ci];
        const double lam = lambda_of(g), hg = h_good(g, T);
        model_ctx mc = {g, sqrt(0.05 * lam * N) / T};
        sive_model m;
        sive_model_init(&m, sizeof m);
        m.dtype = SIVE_F64;
        m.dim = (size_t)g->d;
        m.grad = grad_fn;
        m.group_loss = group_fn;
        m.user = &mc;
        double theta[MAXD] = {0};
        for (int s = 0; s < 4; s++)
            for (int seed = 0; seed < seeds; seed++) {
                sive_probe *p = NULL;
                sive_result *r = NULL;
                double h = s == 1 ? hg / 5 : s == 2 ? hg * 5 : hg;
                double a = s == 3 ? 4 * g->base_lr : g->base_lr;
                if (sive_probe_new(&p) || sive_probe_set_double(p, SIVE_OPT_T, T) ||
                    sive_probe_set_double(p, SIVE_OPT_H, h) ||
                    sive_probe_set_double(p, SIVE_OPT_BASE_LR, a) ||
                    sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
                    sive_probe_set_int(p, SIVE_OPT_GROUPS, N) ||
                    sive_probe_set_int(p, SIVE_OPT_SEED, 1000 * (int64_t)ci + seed) ||
                    sive_probe_run(p, &m, theta, &r)) {
                    fprintf(stderr, "run failed: %s\n", sive_probe_errmsg(p));
                    return 1;
                }
                double lh = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
                double mcse = sive_result_mcse(r), rel = lh / lam - 1.0;
                uint32_t f = sive_result_flags(r);
                char buf[256];
                names(f, buf, sizeof buf);
                printf("%s %s %d %.4g %.4g %.3g %+.4f %+.2f %.3g %.3g %s\n", g->name,
                       setting_names[s], seed, lam, lh, mcse, rel, (lh - lam) / mcse,
                       sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H, SIVE_SUMMARY) / lh,
                       sive_result_stat(r, SIVE_STAT_STEP_CURVATURE, SIVE_SUMMARY) / (2 * lh),
                       buf[0] ? buf : "-");
                if (fabs(rel) > 0.10) {
                    off10++;
                    off10_flagged += acceptable(f);
                } else if (fabs(rel) <= 0.05) {
                    in5++;
                    in5_clean += f == 0;
                } else {
                    between++;
                }
                sive_result_free(r);
                sive_probe_free(p);
            }
    }
    printf("runs more than 10 %% off: %d, flagged (other than nonstationary/low_ess): %d\n",
           off10, off10_flagged);
    printf("runs within 5 %%: %d, without any flag: %d (%.0f %%)\n", in5, in5_clean,
           in5 ? 100.0 * in5_clean / in5 : 0.0);
    printf("runs between 5 and 10 %% off: %d\n", between);
    return 0;
}
