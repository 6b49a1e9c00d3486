/* Plain SGLD (the first sampler, always selected; lib/core/sampler.h): the
 * tethered Langevin update of docs/theory.md,
 *   theta' = theta - a g - (eta/h^2)(theta - theta*) + sqrt(2 eta) xi,
 * with g whatever the gradient hooks left in w->grad.  Bit for bit the
 * 0.2 update. */
#include "sampler.h"

#include <math.h>
#include <string.h>

/* The Langevin update theta' = theta - a g - k_t (theta - theta*) + k_n xi,
 * element by element exactly as the scalar expression (no contraction:
 * ISO C mode), with the squared norms of g and theta - theta* summed in
 * double over four interleaved partial sums (so they differ from a
 * sequential sum by reassociation only).  Returns non-zero when some new
 * value is not finite (x * 0 is NaN exactly for non-finite x). */
#if defined(__GNUC__)
typedef float v4f_ __attribute__((vector_size(16)));
typedef double v2d_ __attribute__((vector_size(16)));
typedef float v2f_ __attribute__((vector_size(8)));
#define SIVE_CHAIN_VECTOR 1
#else
#define SIVE_CHAIN_VECTOR 0
#endif

#if SIVE_CHAIN_VECTOR
/* The squared norms' accumulators of four coordinates (two pairs of lanes
 * each), and their total, summed in the same order for either dtype. */
static inline void sq_acc(v2d_ s[2], v2d_ v0, v2d_ v1)
{
    s[0] += v0 * v0;
    s[1] += v1 * v1;
}

static inline double sq_total(const v2d_ s[2])
{
    return (s[0][0] + s[0][1]) + (s[1][0] + s[1][1]);
}
#endif

static int langevin_update_f32(float *restrict theta, const float *restrict star,
                               const float *restrict g, const float *restrict xi,
                               size_t d, float a, float kt, float kn,
                               double *gsum_out, double *dsum_out)
{
    size_t i = 0;
    double gsum = 0.0, dsum = 0.0;
    float bad = 0.0f;
#if SIVE_CHAIN_VECTOR
    v2d_ gs[2] = {{0, 0}, {0, 0}}, ds[2] = {{0, 0}, {0, 0}};
    v4f_ vbad = {0, 0, 0, 0};
    for (; i + 4 <= d; i += 4) {
        v4f_ th, st, gg, nz;
        memcpy(&th, theta + i, sizeof th);
        memcpy(&st, star + i, sizeof st);
        memcpy(&gg, g + i, sizeof gg);
        memcpy(&nz, xi + i, sizeof nz);
        v4f_ x = th - st;
        v4f_ nt = th - a * gg - kt * x + kn * nz;
        memcpy(theta + i, &nt, sizeof nt);
        vbad += nt * 0.0f;
        v2d_ g0 = __builtin_convertvector(((v2f_){gg[0], gg[1]}), v2d_);
        v2d_ g1 = __builtin_convertvector(((v2f_){gg[2], gg[3]}), v2d_);
        v2d_ x0 = __builtin_convertvector(((v2f_){x[0], x[1]}), v2d_);
        v2d_ x1 = __builtin_convertvector(((v2f_){x[2], x[3]}), v2d_);
        sq_acc(gs, g0, g1);
        sq_acc(ds, x0, x1);
    }
    gsum = sq_total(gs);
    dsum = sq_total(ds);
    bad = (vbad[0] + vbad[1]) + (vbad[2] + vbad[3]);
#endif
    for (; i < d; i++) {
        float x = theta[i] - star[i];
        float gi = g[i];
        float nt = theta[i] - a * gi - kt * x + kn * xi[i];
        gsum += (double)gi * gi;
        dsum += (double)x * x;
        bad += nt * 0.0f;
        theta[i] = nt;
    }
    *gsum_out = gsum;
    *dsum_out = dsum;
    return bad != 0.0f || isnan(bad);
}

static int langevin_update_f64(double *restrict theta, const double *restrict star,
                               const double *restrict g, const double *restrict xi,
                               size_t d, double a, double kt, double kn,
                               double *gsum_out, double *dsum_out)
{
    size_t i = 0;
    double gsum = 0.0, dsum = 0.0, bad = 0.0;
#if SIVE_CHAIN_VECTOR
    v2d_ gs[2] = {{0, 0}, {0, 0}}, ds[2] = {{0, 0}, {0, 0}}, vbad = {0, 0};
    for (; i + 4 <= d; i += 4) {
        v2d_ th0, th1, st0, st1, g0, g1, n0, n1;
        memcpy(&th0, theta + i, sizeof th0);
        memcpy(&th1, theta + i + 2, sizeof th1);
        memcpy(&st0, star + i, sizeof st0);
        memcpy(&st1, star + i + 2, sizeof st1);
        memcpy(&g0, g + i, sizeof g0);
        memcpy(&g1, g + i + 2, sizeof g1);
        memcpy(&n0, xi + i, sizeof n0);
        memcpy(&n1, xi + i + 2, sizeof n1);
        v2d_ x0 = th0 - st0, x1 = th1 - st1;
        v2d_ nt0 = th0 - a * g0 - kt * x0 + kn * n0;
        v2d_ nt1 = th1 - a * g1 - kt * x1 + kn * n1;
        memcpy(theta + i, &nt0, sizeof nt0);
        memcpy(theta + i + 2, &nt1, sizeof nt1);
        vbad += nt0 * 0.0 + nt1 * 0.0;
        sq_acc(gs, g0, g1);
        sq_acc(ds, x0, x1);
    }
    gsum = sq_total(gs);
    dsum = sq_total(ds);
    bad = vbad[0] + vbad[1];
#endif
    for (; i < d; i++) {
        double x = theta[i] - star[i];
        double gi = g[i];
        double nt = theta[i] - a * gi - kt * x + kn * xi[i];
        gsum += gi * gi;
        dsum += x * x;
        bad += nt * 0.0;
        theta[i] = nt;
    }
    *gsum_out = gsum;
    *dsum_out = dsum;
    return bad != 0.0 || isnan(bad);
}

/* One chunk of the update for either dtype; a, kt, kn in double, rounded
 * to the parameters' precision as 0.2 did. */
static int update_f32(void *theta, const void *star, const void *g, const void *xi,
                      size_t nb, double a, double kt, double kn, double *gs, double *ds)
{
    return langevin_update_f32(theta, star, g, xi, nb, (float)a, (float)kt, (float)kn,
                               gs, ds);
}

static int update_f64(void *theta, const void *star, const void *g, const void *xi,
                      size_t nb, double a, double kt, double kn, double *gs, double *ds)
{
    return langevin_update_f64(theta, star, g, xi, nb, a, kt, kn, gs, ds);
}

void sivei_sampler_normals(const sivei_run *run, sivei_pcg32 *g, void *out, size_t n)
{
    if (run->model.dtype == SIVE_F32)
        sivei_pcg32_normals_f32(g, out, n);
    else
        sivei_pcg32_normals(g, out, n);
}

/* The Langevin step at theta with gradient g, fused with the trace norms
 * and the finiteness check, SIVEI_NOISE_CHUNK normals at a time, over the
 * moved parameters only (the run's ranges, or all of theta): the others
 * keep theta*'s values, draw no noise and cost nothing here.  Returns
 * non-zero when the chain diverged. */
int sivei_sgld_step(sivei_run *run, sivei_work *w, void *rs, void *ws, sivei_pcg32 *noise,
                    int64_t m, double *gnorm, double *disp)
{
    (void)rs, (void)ws, (void)m;
    return sivei_sgld_step_ex(run, w, noise, NULL, NULL, gnorm, disp);
}

/* Multiply the chunk's normals by scale (dim entries, indexed from i0). */
static void scale_normals(const sivei_run *run, void *xi, const double *scale, size_t i0,
                          size_t nb)
{
    if (run->model.dtype == SIVE_F32)
        for (size_t j = 0; j < nb; j++)
            ((float *)xi)[j] = (float)(((float *)xi)[j] * scale[i0 + j]);
    else
        for (size_t j = 0; j < nb; j++)
            ((double *)xi)[j] *= scale[i0 + j];
}

int sivei_sgld_step_ex(sivei_run *run, sivei_work *w, sivei_pcg32 *noise,
                       const double *scale, const void *given, double *gnorm, double *disp)
{
    const int f32 = run->model.dtype == SIVE_F32;
    const size_t el = f32 ? sizeof(float) : sizeof(double);
    int (*update)(void *, const void *, const void *, const void *, size_t, double,
                  double, double, double *, double *) = f32 ? update_f32 : update_f64;
    const double a = run->opt.base_lr;
    const double k_tether = w->eta_step / (run->h * run->h); /* run->eta at t */
    const double k_noise = sqrt(2.0 * w->eta_step);
    unsigned char *theta = w->theta;
    const unsigned char *star = run->theta_star, *g = w->grad;
    double gsum = 0.0, dsum = 0.0;
    int bad = 0;
    sivei_chunks it = sivei_chunks_start(run);
    while (sivei_chunks_next(&it, noise, given ? NULL : w->noise)) {
        const size_t o = it.i0 * el;
        double gs, ds;
        if (given)
            memcpy(w->noise, (const unsigned char *)given + o, it.nb * el);
        if (scale)
            scale_normals(run, w->noise, scale, it.i0, it.nb);
        bad |= update(theta + o, star + o, g + o, w->noise, it.nb, a, k_tether, k_noise,
                      &gs, &ds);
        gsum += gs;
        dsum += ds;
    }
    *gnorm = sqrt(gsum);
    *disp = sqrt(dsum * (1.0 / (double)run->moved)); /* as 0.1: bit-identical traces */
    return !isfinite(gsum) || bad;
}

const sivei_sampler sivei_sampler_sgld = {
    .name = "sgld",
    .step = sivei_sgld_step,
};
