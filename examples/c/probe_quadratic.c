/*
 * The README's "using the library" snippet made real: probe an analytic
 * model whose answer is known in closed form and check the estimate.
 *
 * Model (the same in every language's example): with x = theta - theta*,
 *     L(theta) = L0 + K(x),   K(x) = sum_i g_i x_i + H_i x_i^2 / 2,
 * observed with Gaussian evaluation noise sigma per group.  Under the
 * tethered ULA chain every coordinate is a Gaussian AR(1) process, so
 * t^2 Var[K] - the quantity SIVE estimates - is exact (docs/theory.md,
 * "Exact targets").
 *
 * Usage: probe_quadratic [seed]      exit 0 when |z| <= 4, 1 otherwise
 */
#include <sive/sive.h>

#include <math.h>
#include <stdio.h>

#define D 8

typedef struct quad {
    double H[D], g[D], theta_star[D];
    double l0, sigma;
} quad;

static void quad_init(quad *q)
{
    for (int i = 0; i < D; i++) {
        q->H[i] = 1.0 + 0.5 * i;
        q->g[i] = 0.02 * (1 + i % 3) * (i % 2 ? -1.0 : 1.0);
        q->theta_star[i] = 0.1 * (i + 1);
    }
    q->l0 = 1.0;   /* a loss floor the estimator never needs to know */
    q->sigma = 1e-3;
}

static double quad_k(const quad *q, const double *theta)
{
    double k = 0.0;
    for (int i = 0; i < D; i++) {
        double x = theta[i] - q->theta_star[i];
        k += q->g[i] * x + 0.5 * q->H[i] * x * x;
    }
    return k;
}

/* Exact gradients: an analytic model has no mini-batches (n_examples 0).
 * theta and grad hold dim values of the model's dtype, here double. */
static int quad_grad(const void *theta_v, size_t d, const sive_batch *b,
                     void *grad_v, double *loss, void *user)
{
    const quad *q = user;
    const double *theta = theta_v;
    double *grad = grad_v;
    (void)d;
    (void)b;
    for (int i = 0; i < D; i++)
        grad[i] = q->g[i] + q->H[i] * (theta[i] - q->theta_star[i]);
    *loss = q->l0 + quad_k(q, theta);
    return 0;
}

/* N noisy observations of the loss; the noise comes from the per-call seed
 * so that the run is reproducible and independent of the thread count. */
static int quad_group_loss(const void *theta, size_t d, const sive_batch *b,
                           double *group_loss, void *user)
{
    const quad *q = user;
    (void)d;
    double k = quad_k(q, theta);
    sive_rng g;
    sive_rng_seed(&g, b->seed, 0);
    sive_rng_normals(&g, group_loss, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        group_loss[i] = q->l0 + k + q->sigma * group_loss[i];
    return 0;
}

/* t^2 Var[K] under the stationary law of the tethered ULA chain. */
static double exact_lambda(const quad *q, double t, double a, double h)
{
    double eta = a / t, var = 0.0;
    for (int i = 0; i < D; i++) {
        double rho = 1.0 - a * q->H[i] - eta / (h * h);
        double mu = -a * q->g[i] / (1.0 - rho);
        double v = 2.0 * eta / (1.0 - rho * rho);
        double slope = q->g[i] + q->H[i] * mu;
        var += slope * slope * v + 0.5 * q->H[i] * q->H[i] * v * v;
    }
    return t * t * var;
}

int main(int argc, char **argv)
{
    const double t = 1e4, a = 0.05, h = 0.05;
    quad q;
    quad_init(&q);

    /* The model is a plain value: its precision, size and callbacks. */
    sive_model m;
    sive_model_init(&m, sizeof m);
    m.dtype = SIVE_F64;
    m.dim = D;
    m.n_examples = 0; /* analytic: no data set */
    m.grad = quad_grad;
    m.group_loss = quad_group_loss;
    m.user = &q;

    sive_probe *p = NULL;
    int rc = sive_probe_new(&p);
    if (rc) {
        fprintf(stderr, "sive_probe_new: %s: %s\n", sive_strerror(rc), sive_last_errmsg());
        return 1;
    }
    /* Stop at the first failing setter; the probe's message says which. */
    if ((rc = sive_probe_set_double(p, SIVE_OPT_T, t)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_BASE_LR, a)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_H, h)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_STEPS, 4000)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_GROUPS, 16)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_CHAINS, 4)) ||
        (rc = sive_probe_set_text(p, "seed", argc > 1 ? argv[1] : "1"))) {
        fprintf(stderr, "option: %s: %s\n", sive_strerror(rc), sive_probe_errmsg(p));
        sive_probe_free(p);
        return 1;
    }

    /* Either no result and an error, or a result whose status says how
     * the run ended (chains that finished are summarised in every case). */
    sive_result *r = NULL;
    rc = sive_probe_run(p, &m, q.theta_star, &r);
    if (rc) {
        fprintf(stderr, "probe: %s: %s\n", sive_strerror(rc), sive_probe_errmsg(p));
        sive_probe_free(p);
        return 1;
    }
    int status = sive_result_status(r);
    if (status)
        fprintf(stderr, "run: %s: %s\n", sive_strerror(status), sive_result_errmsg(r));

    double lambda = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    double mcse = sive_result_mcse(r), exact = exact_lambda(&q, t, a, h);
    double z = (lambda - exact) / mcse;
    printf("lambda = %.3f (MCSE %.3f), exact %.3f, z = %.2f, ESS %.0f\n",
           lambda, mcse, exact, z, sive_result_ess(r));
    printf("raw variance %.3f - noise correction %.3f (SE %.3f)\n",
           sive_result_stat(r, SIVE_STAT_RAW_VARIANCE, SIVE_SUMMARY),
           sive_result_noise_correction(r), sive_result_noise_correction_std(r));
    const char *health = sive_result_health(r);
    if (*health)
        printf("health:\n%s\n", health);
    sive_result_free(r);
    sive_probe_free(p);
    sive_model_destroy(&m); /* no destroy hook here: just clears m */

    int ok = status == SIVE_OK && isfinite(z) && fabs(z) <= 4.0;
    printf("status %s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
