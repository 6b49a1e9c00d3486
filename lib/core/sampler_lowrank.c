/* The constant low-rank dense preconditioner of the Metropolis-adjusted
 * step (experimental precondition_rank = K, precondition_stiff = tau,
 * precondition_update; docs/theory.md "Low-rank dense preconditioner").
 *
 * The estimate: the top nb = K + 1 + OVERSAMPLE eigenpairs (mu_i, v_i) of
 * the Hessian of L at a point x (theta*, once per run; with the update,
 * also each chain's state at the end of the burn-in's first half), by
 * randomized block subspace iteration with Rayleigh-Ritz (PASSES passes,
 * Halko, Martinsson & Tropp 2011), the Hessian-vector products by central
 * differences of the exact gradient,
 *   H q ~ (g(x + e q) - g(x - e q)) / (2 e),
 * two gradient calls each: 2 nb PASSES calls per estimate, on the moved
 * parameters only.  The curvatures of U = t L + |theta - theta*|^2/(2h^2)
 * along them are c_i = t |mu_i| + 1/h^2 (|mu|: away from theta* the
 * Hessian need not be positive, and the step's limit is set by the
 * magnitude); with c_ref = c_(K+1), the first one not removed (1/h^2 if
 * the moved parameters number K or fewer), every direction i <= K with
 * c_i > tau c_ref gets s_i = tau c_ref / c_i, the others s_i = 1:
 *   P = I + sum_i (s_i - 1) v_i v_i',  P^(1/2) = I + sum (sqrt s_i - 1) v v',
 *   P^-1 = I + sum (1/s_i - 1) v_i v_i'
 * (the v_i orthonormal), all three times gam = c_1 / (tau c_ref) (gam,
 * sqrt(gam), 1/gam): so scaled, P is 1 along the stiffest direction and
 * the adapted step a stays where the plain step's is (about t / c_1,
 * within the adaptation's range around base_lr), the flatter directions
 * moving gam s_i = c_1 / c_i or gam times farther.  The proposal is
 *   theta' = theta - P (a g + kt x) + sqrt(2 eta) P^(1/2) xi
 * (a = eta t, kt = eta/h^2, x = theta - theta*), a Gaussian of mean
 * mu_P(theta) and covariance 2 eta P, whose density enters log_alpha as
 * |theta' - mu_P(theta)|^2_{P^-1}/(4 eta) (det P is the same both ways).
 * P is a constant of the tail (it changes at most once, in the burn-in),
 * so the tail's law is the tethered law exactly.  Each step costs O(d k)
 * more than the plain proposal. */
#include "lowrank.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OVERSAMPLE 4 /* extra vectors of the subspace iteration */
#define PASSES 6     /* its passes (each: nb Hessian-vector products) */

/* One estimate's outcome: the k directions kept, their s, and what the
 * health line reports. */
typedef struct lr_pc {
    double *vt;   /* d x k, row i at vt + i k: v_j's component i */
    double *s;    /* k */
    int k;
    double c_top, c_ref, c_thr, resid; /* c_1, c_(K+1), tau c_ref, max Ritz residual */
    double gam; /* the scale of P: c_top / c_thr (1 when k = 0) */
    int64_t calls;
} lr_pc;

/* The estimate's buffers: nb vectors of length d each (q, y), the points
 * x +- e q and their gradients (model dtype), the Ritz problem. */
typedef struct lr_buf {
    int nb;
    double *q, *y, *t, *w, *ev, *v, *hv;
    void *xp, *gp, *gm;
    int *order;
} lr_buf;

struct sivei_lowrank {
    lr_pc pc;    /* the chain's P */
    lr_buf buf;  /* precondition_update: the estimate's buffers, else nb 0 */
    double *u, *xi; /* d: the step's drift a g + kt x and normals */
    double *pu, *px, *pd; /* k: projections */
    int updated;
    lr_pc upd;   /* the update's outcome (its own vt, s) */
};

struct sivei_lowrank_run {
    lr_pc star; /* theta*'s estimate */
    int32_t count;
    double *rank, *calls, *ctop, *cthr, *resid; /* per chain (update) */
};

int sivei_lowrank_on(const sivei_options *o) { return o->precondition_rank > 0; }

int sivei_lowrank_refuse(const sivei_options *o, char *err)
{
    if (!sivei_lowrank_on(o))
        return SIVE_OK;
    const char *with = o->precondition              ? "precondition"
                       : o->leapfrog > 1            ? "leapfrog > 1"
                       : o->auto_step > 0           ? "auto_step"
                       : o->delayed_rejection > 1   ? "delayed_rejection"
                       : o->replicas > 1            ? "replicas"
                                                    : NULL;
    if (!o->metropolis)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "precondition_rank %lld: the low-rank preconditioner is one of the "
                         "Metropolis-adjusted step's: set metropolis 1",
                         (long long)o->precondition_rank);
    if (with)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "precondition_rank %lld with %s: not supported (the low-rank "
                         "preconditioner is for the Langevin proposal alone)",
                         (long long)o->precondition_rank, with);
    return SIVE_OK;
}

static int nb_of(const sivei_run *run)
{
    int64_t nb = run->opt.precondition_rank + 1 + OVERSAMPLE;
    return (int)(nb < (int64_t)run->moved ? nb : (int64_t)run->moved);
}

static void pc_free(lr_pc *p)
{
    free(p->vt);
    free(p->s);
}

static int pc_alloc(lr_pc *p, size_t d, int64_t K)
{
    memset(p, 0, sizeof *p);
    p->vt = calloc(d * (size_t)(K > 0 ? K : 1), sizeof *p->vt);
    p->s = calloc((size_t)(K > 0 ? K : 1), sizeof *p->s);
    return p->vt && p->s ? SIVE_OK : SIVE_E_NOMEM;
}

static void buf_free(lr_buf *b)
{
    free(b->q);
    free(b->y);
    free(b->t);
    free(b->w);
    free(b->ev);
    free(b->xp);
    free(b->gp);
    free(b->gm);
    free(b->order);
    free(b->v);
    free(b->hv);
    memset(b, 0, sizeof *b);
}

static int buf_alloc(lr_buf *b, const sivei_run *run)
{
    const size_t d = run->model.dim, el = sivei_model_el(&run->model);
    const int nb = nb_of(run);
    b->nb = nb;
    b->q = calloc((size_t)nb * d, sizeof *b->q);
    b->y = calloc((size_t)nb * d, sizeof *b->y);
    b->t = malloc((size_t)nb * nb * sizeof *b->t);
    b->w = malloc((size_t)nb * nb * sizeof *b->w);
    b->ev = malloc((size_t)nb * sizeof *b->ev);
    b->xp = malloc(d * el);
    b->gp = calloc(d, el);
    b->gm = calloc(d, el);
    b->order = malloc((size_t)nb * sizeof *b->order);
    b->v = malloc(d * sizeof *b->v);
    b->hv = malloc(d * sizeof *b->hv);
    return b->q && b->y && b->t && b->w && b->ev && b->xp && b->gp && b->gm && b->order &&
                   b->v && b->hv
               ? SIVE_OK
               : SIVE_E_NOMEM;
}

/* Dot product and axpy over the moved parameters (the vectors are zero
 * elsewhere). */
static double dot(const sivei_run *run, const double *a, const double *b)
{
    double s = 0.0;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t lo, hi;
        sivei_range_at(run, k, &lo, &hi);
        for (size_t i = lo; i < hi; i++)
            s += a[i] * b[i];
    }
    return s;
}

static void axpy(const sivei_run *run, double c, const double *x, double *y)
{
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t lo, hi;
        sivei_range_at(run, k, &lo, &hi);
        for (size_t i = lo; i < hi; i++)
            y[i] += c * x[i];
    }
}

/* Normal entries on the moved parameters (zeros elsewhere). */
static void fill_normal(const sivei_run *run, double *v, sivei_pcg32 *rng)
{
    memset(v, 0, run->model.dim * sizeof *v);
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t lo, hi;
        sivei_range_at(run, k, &lo, &hi);
        sivei_pcg32_normals(rng, v + lo, hi - lo);
    }
}

/* Orthonormalise the n vectors at v (stride d) by modified Gram-Schmidt,
 * twice; a vector that vanishes against the ones before it (a Hessian of
 * rank below n) is replaced by a random one. */
static void orthonormalise(const sivei_run *run, double *v, int n, sivei_pcg32 *rng)
{
    const size_t d = run->model.dim;
    for (int j = 0; j < n; j++) {
        double *vj = v + (size_t)j * d;
        for (int tries = 0; tries < 4; tries++) {
            const double n0 = sqrt(dot(run, vj, vj));
            for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < j; i++)
                    axpy(run, -dot(run, v + (size_t)i * d, vj), v + (size_t)i * d, vj);
            const double n1 = sqrt(dot(run, vj, vj));
            if (n1 > 1e-10 * n0 && n1 > 0.0 && isfinite(n1)) {
                for (size_t i = 0; i < d; i++)
                    vj[i] /= n1;
                break;
            }
            fill_normal(run, vj, rng);
        }
    }
}

static void put(const sivei_run *run, void *x, size_t i, double v)
{
    if (run->model.dtype == SIVE_F32)
        ((float *)x)[i] = (float)v;
    else
        ((double *)x)[i] = v;
}

/* y = H q at theta by central differences (moved parameters; two calls). */
static int hvp(const sivei_run *run, lr_buf *b, const void *theta, const double *q, double *y,
               double e, sivei_lowrank_grad f, void *ctx)
{
    const size_t d = run->model.dim, el = sivei_model_el(&run->model);
    double loss;
    for (int sign = 1; sign >= -1; sign -= 2) {
        memcpy(b->xp, theta, d * el);
        for (size_t k = 0; k < sivei_range_count(run); k++) {
            size_t lo, hi;
            sivei_range_at(run, k, &lo, &hi);
            for (size_t i = lo; i < hi; i++)
                put(run, b->xp, i, sivei_sampler_val(run, theta, i) + sign * e * q[i]);
        }
        int rc = f(ctx, b->xp, sign > 0 ? b->gp : b->gm, &loss);
        if (rc)
            return rc;
    }
    memset(y, 0, d * sizeof *y);
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t lo, hi;
        sivei_range_at(run, k, &lo, &hi);
        for (size_t i = lo; i < hi; i++)
            y[i] = (sivei_sampler_val(run, b->gp, i) - sivei_sampler_val(run, b->gm, i)) /
                   (2.0 * e);
    }
    return 0;
}

/* order[0 .. n-1]: the indices of ev by decreasing magnitude (insertion
 * sort: n is small, and no global state for qsort across threads) */
static void by_magnitude(const double *ev, int *order, int n)
{
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && fabs(ev[order[j - 1]]) < fabs(ev[i]); j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
}

/* The estimate at theta into out (out->vt, out->s allocated for K). */
static int estimate(const sivei_run *run, lr_buf *b, const void *theta, sivei_lowrank_grad f,
                    void *ctx, sivei_pcg32 *rng, lr_pc *out)
{
    const size_t d = run->model.dim;
    const int nb = b->nb, K = (int)run->opt.precondition_rank;
    const double t = run->opt.t, c0 = 1.0 / (run->h * run->h);
    /* the difference step: relative to theta's scale, a cube root of the
     * dtype's precision (central differences' optimum) */
    double rms = 0.0;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t lo, hi;
        sivei_range_at(run, k, &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            const double v = sivei_sampler_val(run, theta, i);
            rms += v * v;
        }
    }
    rms = sqrt(rms / (double)run->moved);
    const double e = cbrt(run->model.dtype == SIVE_F32 ? FLT_EPSILON : DBL_EPSILON) *
                     fmax(1.0, rms);
    for (int j = 0; j < nb; j++)
        fill_normal(run, b->q + (size_t)j * d, rng);
    orthonormalise(run, b->q, nb, rng);
    out->calls = 0;
    for (int pass = 0; pass < PASSES; pass++) {
        for (int j = 0; j < nb; j++) {
            int rc = hvp(run, b, theta, b->q + (size_t)j * d, b->y + (size_t)j * d, e, f, ctx);
            out->calls += 2;
            if (rc)
                return rc;
        }
        if (pass + 1 < PASSES) {
            double *tmp = b->q; /* q <- orth(y) */
            b->q = b->y;
            b->y = tmp;
            orthonormalise(run, b->q, nb, rng);
        }
    }
    /* Rayleigh-Ritz on the last pass: T = Q'HQ (symmetrised) */
    for (int i = 0; i < nb; i++)
        for (int j = 0; j <= i; j++) {
            const double a = 0.5 * (dot(run, b->q + (size_t)i * d, b->y + (size_t)j * d) +
                                    dot(run, b->q + (size_t)j * d, b->y + (size_t)i * d));
            b->t[i * nb + j] = b->t[j * nb + i] = a;
        }
    sivei_jacobi(b->t, (size_t)nb, b->w, b->ev);
    by_magnitude(b->ev, b->order, nb);
    /* c_ref: the (K+1)-th curvature, the first one kept */
    const double c_ref = K < nb ? t * fabs(b->ev[b->order[K]]) + c0 : c0;
    const double c_thr = run->opt.precondition_stiff * c_ref;
    out->c_top = t * fabs(b->ev[b->order[0]]) + c0;
    out->c_ref = c_ref;
    out->c_thr = c_thr;
    out->resid = 0.0;
    out->k = 0;
    memset(out->vt, 0, d * (size_t)K * sizeof *out->vt);
    /* the Ritz vectors v = Q w kept (into y's first k columns), their
     * residuals |H v - mu v| / |mu| */
    for (int r = 0; r < K && r < nb; r++) {
        const int j = b->order[r];
        const double c = t * fabs(b->ev[j]) + c0;
        if (!(c > c_thr))
            break;
        double *v = b->v, *hv = b->hv;
        memset(v, 0, d * sizeof *v);
        memset(hv, 0, d * sizeof *hv);
        for (int i = 0; i < nb; i++) {
            axpy(run, b->w[j * nb + i], b->q + (size_t)i * d, v);
            axpy(run, b->w[j * nb + i], b->y + (size_t)i * d, hv);
        }
        axpy(run, -b->ev[j], v, hv);
        out->resid = fmax(out->resid, sqrt(dot(run, hv, hv)) / fabs(b->ev[j]));
        for (size_t i = 0; i < d; i++)
            out->vt[i * (size_t)K + (size_t)r] = v[i];
        out->s[r] = c_thr / c;
        out->k = r + 1;
    }
    /* re-orthonormalise the kept directions (P^-1's formula needs them
     * orthonormal), in place in vt's columns via q */
    for (int r = 0; r < out->k; r++)
        for (size_t i = 0; i < d; i++)
            b->q[(size_t)r * d + i] = out->vt[i * (size_t)K + (size_t)r];
    orthonormalise(run, b->q, out->k, rng);
    for (int r = 0; r < out->k; r++)
        for (size_t i = 0; i < d; i++)
            out->vt[i * (size_t)K + (size_t)r] = b->q[(size_t)r * d + i];
    out->gam = out->k ? out->c_top / out->c_thr : 1.0;
    return 0;
}

/* The exact gradient at theta* level (the run's prepare): chain -1. */
typedef struct star_ctx {
    const sivei_run *run;
    const uint64_t *all;
} star_ctx;

static int star_grad(void *ctx, const void *x, void *g, double *loss)
{
    const star_ctx *c = ctx;
    *loss = NAN;
    return sivei_grad_at_star(&c->run->model, c->run->opt.grad_batch, c->all, x, 0, g, loss);
}

int sivei_lowrank_run_new(const sivei_run *run, const uint64_t *all, int32_t chains,
                          sivei_lowrank_run **out, int *cb)
{
    *out = NULL;
    *cb = 0;
    sivei_lowrank_run *r = calloc(1, sizeof *r);
    if (!r)
        return SIVE_E_NOMEM;
    r->count = chains;
    r->rank = malloc((size_t)chains * sizeof *r->rank);
    r->calls = malloc((size_t)chains * sizeof *r->calls);
    r->ctop = malloc((size_t)chains * sizeof *r->ctop);
    r->cthr = malloc((size_t)chains * sizeof *r->cthr);
    r->resid = malloc((size_t)chains * sizeof *r->resid);
    lr_buf b = {0};
    if (!r->rank || !r->calls || !r->ctop || !r->cthr || !r->resid ||
        pc_alloc(&r->star, run->model.dim, run->opt.precondition_rank) ||
        buf_alloc(&b, run)) {
        buf_free(&b);
        sivei_lowrank_run_free(r);
        return SIVE_E_NOMEM;
    }
    for (int32_t i = 0; i < chains; i++)
        r->rank[i] = r->calls[i] = r->ctop[i] = r->cthr[i] = r->resid[i] = NAN;
    sivei_pcg32 rng;
    sivei_pcg32_stream(&rng, run->opt.seed, UINT64_MAX, 1095); /* theta*'s: one per run */
    star_ctx c = {run, all};
    r->star.gam = 1.0; /* the update: P = I until each chain's own estimate */
    if (!run->opt.precondition_update)
        *cb = estimate(run, &b, run->theta_star, star_grad, &c, &rng, &r->star);
    buf_free(&b);
    if (*cb) {
        sivei_lowrank_run_free(r);
        return SIVE_OK;
    }
    *out = r;
    return SIVE_OK;
}

void sivei_lowrank_run_free(sivei_lowrank_run *r)
{
    if (!r)
        return;
    pc_free(&r->star);
    free(r->rank);
    free(r->calls);
    free(r->ctop);
    free(r->cthr);
    free(r->resid);
    free(r);
}

sivei_lowrank *sivei_lowrank_new(const sivei_run *run)
{
    const size_t d = run->model.dim, K = (size_t)run->opt.precondition_rank;
    sivei_lowrank *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->u = malloc(d * sizeof *x->u);
    x->xi = malloc(d * sizeof *x->xi);
    x->pu = malloc(K * sizeof *x->pu);
    x->px = malloc(K * sizeof *x->px);
    x->pd = malloc(K * sizeof *x->pd);
    int bad = !x->u || !x->xi || !x->pu || !x->px || !x->pd;
    if (!bad && run->opt.precondition_update)
        bad = buf_alloc(&x->buf, run) || pc_alloc(&x->upd, d, (int64_t)K);
    if (bad) {
        sivei_lowrank_free(x);
        return NULL;
    }
    return x;
}

void sivei_lowrank_free(sivei_lowrank *x)
{
    if (!x)
        return;
    buf_free(&x->buf);
    pc_free(&x->upd);
    free(x->u);
    free(x->xi);
    free(x->pu);
    free(x->px);
    free(x->pd);
    free(x);
}

void sivei_lowrank_chain_start(sivei_lowrank *x, const sivei_lowrank_run *r)
{
    if (r)
        x->pc = r->star; /* borrowed: vt and s are the run's */
    else { /* the estimate failed (the run stops): P = I */
        memset(&x->pc, 0, sizeof x->pc);
        x->pc.gam = 1.0;
    }
    x->updated = 0;
}

int sivei_lowrank_update(const sivei_run *run, sivei_lowrank *x, const void *theta,
                         sivei_lowrank_grad f, void *ctx, sivei_pcg32 *rng)
{
    int rc = estimate(run, &x->buf, theta, f, ctx, rng, &x->upd);
    if (rc)
        return rc;
    x->pc = x->upd; /* borrowed from upd */
    x->updated = 1;
    return 0;
}

/* sum_j V[i,j] c[j] over the k kept directions (row i of vt, stride K). */
static inline double vrow(const double *vt, size_t i, size_t K, int k, const double *c)
{
    double s = 0.0;
    for (int j = 0; j < k; j++)
        s += vt[i * K + (size_t)j] * c[j];
    return s;
}

static inline void vacc(const double *vt, size_t i, size_t K, int k, double a, double *acc)
{
    for (int j = 0; j < k; j++)
        acc[j] += vt[i * K + (size_t)j] * a;
}

sivei_prop_sums sivei_lowrank_propose(const sivei_run *run, sivei_lowrank *x, sivei_work *w,
                                      void *prop, sivei_pcg32 *noise, double a, double t)
{
    const lr_pc *pc = &x->pc;
    a *= pc->gam; /* P = gam P0: the step gam a with P0 */
    const size_t K = (size_t)run->opt.precondition_rank;
    const int k = pc->k;
    const double eta = a / t, kt = eta / (run->h * run->h), kn = sqrt(2.0 * eta);
    sivei_prop_sums q = {0.0, 0.0, 0.0, 0.0};
    for (int j = 0; j < k; j++)
        x->pu[j] = x->px[j] = x->pd[j] = 0.0;
    sivei_chunks it = sivei_chunks_start(run);
    while (sivei_chunks_next(&it, noise, w->noise))
        for (size_t jj = 0; jj < it.nb; jj++) {
            const size_t i = it.i0 + jj;
            const double th = sivei_sampler_val(run, w->theta, i);
            const double xs = th - sivei_sampler_val(run, run->theta_star, i);
            const double g = sivei_sampler_val(run, w->grad, i);
            const double u = a * g + kt * xs, xi = sivei_sampler_val(run, w->noise, jj);
            x->u[i] = u;
            x->xi[i] = xi;
            vacc(pc->vt, i, K, k, u, x->pu);
            vacc(pc->vt, i, K, k, xi, x->px);
            q.g2 += g * g;
            q.r2 += xs * xs;
        }
    for (int j = 0; j < k; j++) {
        x->pu[j] *= pc->s[j] - 1.0;
        x->px[j] *= sqrt(pc->s[j]) - 1.0;
    }
    double fwd = 0.0;
    for (size_t r = 0; r < sivei_range_count(run); r++) {
        size_t lo, hi;
        sivei_range_at(run, r, &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            const double th = sivei_sampler_val(run, w->theta, i);
            const double mu = th - (x->u[i] + vrow(pc->vt, i, K, k, x->pu));
            put(run, prop, i, mu + kn * (x->xi[i] + vrow(pc->vt, i, K, k, x->px)));
            const double p = sivei_sampler_val(run, prop, i); /* as stored */
            const double xp = p - sivei_sampler_val(run, run->theta_star, i), del = p - mu;
            q.r2p += xp * xp;
            fwd += del * del;
            vacc(pc->vt, i, K, k, del, x->pd);
        }
    }
    for (int j = 0; j < k; j++)
        fwd += (1.0 / pc->s[j] - 1.0) * x->pd[j] * x->pd[j];
    q.fwd = fwd / pc->gam; /* in the metric of P = gam P0 */
    return q;
}

void sivei_lowrank_back(const sivei_run *run, sivei_lowrank *x, const void *theta,
                        const void *prop, const void *gprop, double ab, double t, double *r2p,
                        double *bwd)
{
    const lr_pc *pc = &x->pc;
    const size_t K = (size_t)run->opt.precondition_rank;
    const int k = pc->k;
    ab *= pc->gam;
    const double eta = ab / t, kt = eta / (run->h * run->h);
    double r2 = 0.0, b2 = 0.0;
    for (int j = 0; j < k; j++)
        x->pu[j] = x->pd[j] = 0.0;
    for (size_t r = 0; r < sivei_range_count(run); r++) {
        size_t lo, hi;
        sivei_range_at(run, r, &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            const double xs = sivei_sampler_val(run, prop, i) -
                              sivei_sampler_val(run, run->theta_star, i);
            const double u = ab * sivei_sampler_val(run, gprop, i) + kt * xs;
            r2 += xs * xs;
            x->u[i] = u;
            vacc(pc->vt, i, K, k, u, x->pu);
        }
    }
    for (int j = 0; j < k; j++)
        x->pu[j] *= pc->s[j] - 1.0;
    for (size_t r = 0; r < sivei_range_count(run); r++) {
        size_t lo, hi;
        sivei_range_at(run, r, &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            const double p = sivei_sampler_val(run, prop, i);
            const double mu = p - (x->u[i] + vrow(pc->vt, i, K, k, x->pu));
            const double back = sivei_sampler_val(run, theta, i) - mu;
            b2 += back * back;
            vacc(pc->vt, i, K, k, back, x->pd);
        }
    }
    for (int j = 0; j < k; j++)
        b2 += (1.0 / pc->s[j] - 1.0) * x->pd[j] * x->pd[j];
    *r2p = r2;
    *bwd = b2 / pc->gam;
}

void sivei_lowrank_chain_end(sivei_lowrank_run *r, int32_t slot, const sivei_lowrank *x)
{
    if (!x->updated)
        return;
    r->rank[slot] = x->upd.k;
    r->calls[slot] = (double)x->upd.calls;
    r->ctop[slot] = x->upd.c_top;
    r->cthr[slot] = x->upd.c_thr;
    r->resid[slot] = x->upd.resid;
}

static int cmpd(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* median, min, max of the finite entries of v (n; sorted in place) */
static int spread(double *v, int32_t n, double *med, double *lo, double *hi)
{
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            v[k++] = v[i];
    if (!k)
        return 0;
    qsort(v, (size_t)k, sizeof *v, cmpd);
    *med = v[k / 2];
    *lo = v[0];
    *hi = v[k - 1];
    return k;
}

int sivei_lowrank_note(const sivei_run *run, sivei_lowrank_run *r, sive_result *res)
{
    if (!r)
        return SIVE_OK;
    const lr_pc *s = &r->star;
    char line[1024];
    int len = run->opt.precondition_update
                  ? snprintf(line, sizeof line,
                             "low-rank preconditioner (precondition_rank %lld, "
                             "precondition_stiff %g): P = I until",
                             (long long)run->opt.precondition_rank,
                             run->opt.precondition_stiff)
                  : snprintf(line, sizeof line,
                       "low-rank preconditioner (precondition_rank %lld, precondition_stiff "
                       "%g): at theta*: rank %d (curvature t|mu| + 1/h^2: top %.4g, reference "
                       "%.4g, shrunk to %.4g: condition number removed %.4g; Ritz residual "
                       "%.2g), %lld gradient calls (once per run)",
                       (long long)run->opt.precondition_rank, run->opt.precondition_stiff,
                       s->k, s->c_top, s->c_ref, s->c_thr,
                       s->k ? s->c_top / s->c_thr : 1.0, s->resid, (long long)s->calls);
    double med = NAN, lo = NAN, hi = NAN, cmed = NAN, clo = NAN, chi = NAN;
    int32_t n = spread(r->calls, r->count, &cmed, &clo, &chi);
    if (run->opt.precondition_update && n) {
        double tot = 0.0;
        for (int32_t i = 0; i < n; i++)
            tot += r->calls[i];
        spread(r->rank, r->count, &med, &lo, &hi);
        len += snprintf(line + (size_t)len, sizeof line - (size_t)len,
                        " step %lld, then estimated at each chain's state: rank median %.0f "
                        "(%.0f .. %.0f)",
                        (long long)(floor(run->opt.burn_in * (double)run->opt.steps) / 2),
                        med, lo, hi);
        double top[4096], thr[4096];
        int32_t m = 0;
        for (int32_t i = 0; i < r->count && m < 4096; i++)
            if (isfinite(r->ctop[i]) && r->cthr[i] > 0.0) {
                top[m] = r->ctop[i] / r->cthr[i];
                thr[m++] = r->cthr[i];
            }
        if (spread(top, m, &med, &lo, &hi))
            len += snprintf(line + (size_t)len, sizeof line - (size_t)len,
                            ", condition number removed median %.4g (%.4g .. %.4g)", med, lo,
                            hi);
        if (spread(thr, m, &med, &lo, &hi))
            len += snprintf(line + (size_t)len, sizeof line - (size_t)len,
                            ", shrunk to %.4g (%.4g .. %.4g)", med, lo, hi);
        if (spread(r->resid, r->count, &med, &lo, &hi))
            len += snprintf(line + (size_t)len, sizeof line - (size_t)len,
                            ", Ritz residual up to %.2g", hi);
        len += snprintf(line + (size_t)len, sizeof line - (size_t)len,
                        ", %.0f gradient calls per chain; the estimates' calls in all %.0f",
                        cmed, (double)s->calls + tot);
    }
    snprintf(line + (size_t)len, sizeof line - (size_t)len, "\n");
    return sivei_health_append(res, line);
}
