/* The leapfrog integrator (leapfrog.h): the one copy of the half kick, drift,
 * half kick loop that the Hamiltonian step, the locally adaptive step and
 * delayed rejection run. */
#include "leapfrog.h"

static inline void put(const sivei_run *run, void *x, size_t i, double v)
{
    if (run->model.dtype == SIVE_F32)
        ((float *)x)[i] = (float)v;
    else
        ((double *)x)[i] = v;
}

static inline double metric(const sivei_precond *pc, size_t i) { return pc ? pc->p[i] : 1.0; }

int sivei_leapfrog(const sivei_run *run, double t, const sivei_precond *pc,
                   sivei_leapfrog_grad grad, void *ctx, const void *x0, const void *g0,
                   const double *pin, double sign, double eps, int64_t K, double *p, void *x,
                   void *g, int64_t *calls, sivei_leapfrog_end *end)
{
    const double ih2 = 1.0 / (run->h * run->h);
    double kin0 = 0.0, r20 = 0.0, kin = 0.0, r2 = 0.0, lp = NAN;
    /* the first half kick and drift */
    for (size_t q = 0; q < sivei_range_count(run); q++) {
        size_t b, e;
        sivei_range_at(run, q, &b, &e);
        for (size_t i = b; i < e; i++) {
            const double th = sivei_sampler_val(run, x0, i);
            const double d = th - sivei_sampler_val(run, run->theta_star, i);
            const double P = metric(pc, i);
            double v = sign * pin[i];
            kin0 += 0.5 * P * v * v;
            r20 += d * d;
            v -= 0.5 * eps * (t * sivei_sampler_val(run, g0, i) + d * ih2);
            p[i] = v;
            put(run, x, i, th + eps * P * v);
        }
    }
    end->kin0 = kin0;
    end->r20 = r20;
    int rc = 0;
    for (int64_t k = 1; k <= K; k++) {
        if (calls)
            (*calls)++;
        if ((rc = grad(ctx, x, g, &lp)) != 0 || !isfinite(lp))
            break; /* a failure, or U = +inf on the trajectory */
        /* two half kicks and a drift, or the last half kick */
        const double f = k < K ? eps : 0.5 * eps;
        for (size_t q = 0; q < sivei_range_count(run); q++) {
            size_t b, e;
            sivei_range_at(run, q, &b, &e);
            for (size_t i = b; i < e; i++) {
                const double th = sivei_sampler_val(run, x, i);
                const double d = th - sivei_sampler_val(run, run->theta_star, i);
                const double P = metric(pc, i);
                const double v = p[i] - f * (t * sivei_sampler_val(run, g, i) + d * ih2);
                p[i] = v;
                if (k < K)
                    put(run, x, i, th + eps * P * v);
                else {
                    kin += 0.5 * P * v * v;
                    r2 += d * d;
                }
            }
        }
    }
    end->lp = lp;
    end->kin = kin;
    end->r2 = r2;
    return rc;
}
