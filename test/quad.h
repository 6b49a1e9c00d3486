/* The isotropic quadratic with noisy evaluations, the toy model that tests
 * and benchmarks otherwise write by hand:
 *   L(theta) = l0 + (k/2) |theta|^2,  gradient k theta,
 * and each evaluation group's loss L(theta) + sigma xi, xi standard normal
 * from the batch's seed (so a run depends only on the probe's streams).
 * Every coordinate is then an AR(1) process with exact moments
 * (test/exact_ula.h).  For least squares with per-example losses see
 * test/lsq.h. */
#ifndef SIVE_TEST_QUAD_H
#define SIVE_TEST_QUAD_H

#include <sive/sive.h>
#include <math.h>
#include <stddef.h>

typedef struct quad_fixture {
    double k;     /* curvature: the Hessian is k I        */
    double l0;    /* loss at theta = 0                     */
    double sigma; /* evaluation noise per group            */
} quad_fixture;

static double quad_fixture_loss(const quad_fixture *q, const double *th, size_t d)
{
    double s = 0.0;
    for (size_t i = 0; i < d; i++)
        s += th[i] * th[i];
    return q->l0 + 0.5 * q->k * s;
}

static int quad_fixture_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                             double *loss, void *user)
{
    const quad_fixture *q = user;
    const double *th = theta;
    double *g = grad;
    (void)b;
    for (size_t i = 0; i < d; i++)
        g[i] = q->k * th[i];
    *loss = quad_fixture_loss(q, th, d);
    return 0;
}

/* The batch's group losses: l plus sigma times normals from its seed. */
static inline void quad_noisy_groups(const sive_batch *b, double l, double sigma, double *gl)
{
    sive_rng g;
    sive_rng_seed(&g, b->seed, 0);
    sive_rng_normals(&g, gl, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = l + sigma * gl[i];
}

static int quad_fixture_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                              void *user)
{
    const quad_fixture *q = user;
    quad_noisy_groups(b, quad_fixture_loss(q, theta, d), q->sigma, gl);
    return 0;
}

/* A float64 model of dimension dim on q (q must outlive the runs). */
static inline sive_model quad_fixture_model(quad_fixture *q, size_t dim)
{
    sive_model m;
    sive_model_init(&m, sizeof m);
    m.dtype = SIVE_F64;
    m.dim = dim;
    m.grad = quad_fixture_grad;
    m.group_loss = quad_fixture_group;
    m.user = q;
    return m;
}

/* Square-root Kronecker factors (sive_curvature_fn) of a separable
 * quadratic sum_i k(i) x_i^2 / 2 seen as one 1 x n block: F_G = [1],
 * F_A = diag(sqrt k(i)), so G (x) A = diag k, the loss's Hessian. */
static inline void quad_diag_roots(size_t n, double (*k)(size_t), double *g_root,
                                   double *a_root)
{
    g_root[0] = 1.0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            a_root[i * n + j] = i == j ? sqrt(k(i)) : 0.0;
}

#endif
