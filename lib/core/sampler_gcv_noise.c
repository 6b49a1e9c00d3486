/* Gradient noise compensation (SIVE_OPT_GRAD_NOISE_COMPENSATION;
 * docs/theory.md, "Gradient noise compensation").  The step's gradient g
 * (gradient control variates) carries noise eps of covariance C(theta)
 * per step, which adds a^2 C to the injected 2 eta I: the chain runs
 * hotter than the full-batch law.  With K equal sub-batches of the step's
 * batch, the sub-batch differences u_k = grad l_Bk(theta) - grad l_Bk(theta*)
 * give an unbiased estimate of C's diagonal,
 *   C_i = fpc * sum_k (u_ki - mean_k u_ki)^2 / (K (K-1)),
 * fpc = 1 with replacement, (n - B)/n without (the sub-batches of one
 * draw without replacement are negatively correlated), and the step
 * injects Langevin noise of variance max(0, 2 eta - a^2 C_i): the total's
 * expected variance is 2 eta in every coordinate that does not clip.
 * The last sub-batch is not called: its u_K follows from the batch's own
 * difference (the mean of the u_k), so the extra work is (K-1)/K of the
 * batch's two gradients.  What clips (x_i > 1, or X's eigenvalues above 1
 * with the full covariance) is summed over each chain's tail steps with
 * tr X: their ratio is SIVE_STAT_GRAD_NOISE_CLIPPED. */
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct noise_run {
    int64_t k;      /* sub-batches                                  */
    size_t sub;     /* examples per sub-batch                       */
    double factor;  /* fpc * a^2 / (2 eta K (K-1))                  */
    int64_t first;  /* first tail step                              */
    int32_t begin;  /* the run's first chain                        */
    double *clip, *trace; /* per chain of the run's range, over the tail:
                           * sum of the clipped excess and of tr X */
} noise_run;

typedef struct noise_work {
    void *ga, *gs;  /* a sub-batch's gradient at theta and theta*  */
    double *mean;   /* the batch's difference (mean of the u_k)      */
    double *dev;    /* sum of the sub-batches' deviations from it    */
    double *sq;     /* sum of squared deviations                     */
    double *scale;  /* the noise's factor per coordinate             */
    /* the full covariance (grad_noise_full): the deviations V (d x K,
     * column k at v + k d), X's eigenvectors on its range W (K x K) and
     * eigenvalues ev, scratch y, c (K) and the step's normals xi */
    double *v, *w, *ev, *y, *c, *g;
    void *xi;
} noise_work;

static int noise_active(const sivei_options *o) { return o->grad_noise_compensation != 0; }

static int noise_prepare(sivei_run *run, void **state, char *err)
{
    const sivei_options *o = &run->opt;
    const int64_t K = o->grad_noise_compensation, B = o->grad_batch;
    if (!o->grad_control_variate || o->precondition)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "grad_noise_compensation needs grad_control_variate 1 and "
                         "precondition 0");
    if (o->anneal > 1.0) /* its noise budget is 2 eta at t */
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "grad_noise_compensation: not with anneal > 1");
    if (K < 2 || K > B || B % K)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "grad_noise_compensation %lld: needs 2 <= K <= grad_batch (%lld) "
                         "and grad_batch divisible by K", (long long)K, (long long)B);
    const size_t chains = (size_t)(run->r->end - run->r->begin);
    noise_run *s = calloc(1, sizeof *s);
    if (s) {
        s->clip = calloc(chains, sizeof *s->clip);
        s->trace = calloc(chains, sizeof *s->trace);
    }
    if (!s || !s->clip || !s->trace) {
        if (s) {
            free(s->clip);
            free(s->trace);
        }
        free(s);
        return sivei_fail(err, SIVE_E_NOMEM, "out of memory (grad_noise_compensation)");
    }
    const double n = (double)run->model.n_examples;
    const double fpc = o->replacement ? 1.0 : (n - (double)B) / n;
    const double a = o->base_lr;
    s->k = K;
    s->sub = (size_t)(B / K);
    s->factor = fpc * a * a / (2.0 * run->eta * (double)K * (double)(K - 1));
    s->first = (int64_t)floor(o->burn_in * (double)o->steps);
    s->begin = run->r->begin;
    *state = s;
    return SIVE_OK;
}

static void noise_release(sivei_run *run, void *state)
{
    (void)run;
    noise_run *s = state;
    if (s) {
        free(s->clip);
        free(s->trace);
    }
    free(s);
}

static void noise_work_release(void *state)
{
    noise_work *s = state;
    if (!s)
        return;
    free(s->ga);
    free(s->gs);
    free(s->mean);
    free(s->dev);
    free(s->sq);
    free(s->scale);
    free(s->v);
    free(s->w);
    free(s->ev);
    free(s->y);
    free(s->c);
    free(s->g);
    free(s->xi);
    free(s);
}

static int noise_work_init(sivei_work *w, void **state)
{
    const size_t d = w->run->model.dim;
    noise_work *s = calloc(1, sizeof *s);
    if (s) {
        s->ga = calloc(d, sivei_model_el(&w->run->model));
        s->gs = calloc(d, sivei_model_el(&w->run->model));
        s->mean = malloc(d * sizeof *s->mean);
        s->dev = malloc(d * sizeof *s->dev);
        s->sq = malloc(d * sizeof *s->sq);
        s->scale = malloc(d * sizeof *s->scale);
    }
    const size_t K = (size_t)w->run->opt.grad_noise_compensation;
    if (s && w->run->opt.grad_noise_full) {
        s->v = calloc(d * K, sizeof *s->v);
        s->w = malloc(K * K * sizeof *s->w);
        s->ev = malloc(K * sizeof *s->ev);
        s->y = malloc(K * sizeof *s->y);
        s->c = malloc(K * sizeof *s->c);
        s->g = malloc(K * K * sizeof *s->g);
        s->xi = calloc(d, sivei_model_el(&w->run->model));
    }
    int full_ok = !w->run->opt.grad_noise_full ||
                  (s && s->v && s->w && s->ev && s->y && s->c && s->g && s->xi);
    if (!s || !s->ga || !s->gs || !s->mean || !s->dev || !s->sq || !s->scale || !full_ok) {
        noise_work_release(s);
        return SIVE_E_NOMEM;
    }
    *state = s;
    return SIVE_OK;
}

/* Sub-batch k's difference u_k: its deviation from the batch's
 * difference into the sums. */
static int sub_batch(sivei_run *run, noise_work *s, const noise_run *r,
                     const sive_batch *gb, int64_t k, const void *theta)
{
    sive_batch b = *gb;
    b.index = gb->index + (size_t)k * r->sub;
    b.group_size = r->sub;
    double loss = NAN;
    sivei_clear_error();
    int rc = run->model.grad(theta, run->model.dim, &b, s->ga, &loss, run->model.user);
    if (!rc)
        rc = run->model.grad(run->theta_star, run->model.dim, &b, s->gs, &loss,
                             run->model.user);
    if (rc)
        return rc;
    for (size_t i = 0; i < run->model.dim; i++) {
        double e = sivei_sampler_val(run, s->ga, i) - sivei_sampler_val(run, s->gs, i);
        e -= s->mean[i];
        s->dev[i] += e;
        s->sq[i] += e * e;
        if (s->v)
            s->v[(size_t)k * run->model.dim + i] = e;
    }
    return 0;
}

/* sampler.h: the symmetric eigen-decomposition by cyclic Jacobi. */
void sivei_jacobi(double *a, size_t K, double *w, double *ev)
{
    for (size_t i = 0; i < K * K; i++)
        w[i] = 0.0;
    for (size_t i = 0; i < K; i++)
        w[i * K + i] = 1.0;
    for (int sweep = 0; sweep < 30; sweep++) {
        double off = 0.0, diag = 0.0;
        for (size_t p = 0; p < K; p++) {
            diag += a[p * K + p] * a[p * K + p];
            for (size_t q = p + 1; q < K; q++)
                off += a[p * K + q] * a[p * K + q];
        }
        if (off <= 1e-24 * diag || off == 0.0)
            break;
        for (size_t p = 0; p < K; p++)
            for (size_t q = p + 1; q < K; q++) {
                double apq = a[p * K + q];
                if (apq == 0.0)
                    continue;
                double th = (a[q * K + q] - a[p * K + p]) / (2.0 * apq);
                double t = (th >= 0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), sn = t * c;
                for (size_t k = 0; k < K; k++) { /* columns p, q */
                    double akp = a[k * K + p], akq = a[k * K + q];
                    a[k * K + p] = c * akp - sn * akq;
                    a[k * K + q] = sn * akp + c * akq;
                }
                for (size_t k = 0; k < K; k++) { /* rows p, q */
                    double apk = a[p * K + k], aqk = a[q * K + k];
                    a[p * K + k] = c * apk - sn * aqk;
                    a[q * K + k] = sn * apk + c * aqk;
                }
                for (size_t k = 0; k < K; k++) {
                    double wkp = w[p * K + k], wkq = w[q * K + k];
                    w[p * K + k] = c * wkp - sn * wkq;
                    w[q * K + k] = sn * wkp + c * wkq;
                }
            }
    }
    for (size_t i = 0; i < K; i++)
        ev[i] = a[i * K + i];
}

/* Zero the rows of V outside the moved parameters (a weight-restricted
 * probe): their noise is never drawn. */
static void zero_unmoved(const sivei_run *run, double *col)
{
    size_t prev = 0;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i = prev; i < b; i++)
            col[i] = 0.0;
        prev = e;
    }
    for (size_t i = prev; i < run->model.dim; i++)
        col[i] = 0.0;
}

/* X = factor V V' (V: the K deviations; the last is minus the sum of the
 * others): its eigen-decomposition on its range from G = factor V'V =
 * W diag(ev) W', and m_j = (1 - sqrt(1 - ev_j)) / ev_j kept in ev (so that
 * (I - X)^(1/2) = I - factor V W diag(m) W' V'), ev_j >= 1 clipped. */
static void full_covariance(const sivei_run *run, noise_work *s, const noise_run *r,
                            double *clip, double *trace)
{
    const size_t d = run->model.dim, K = (size_t)r->k;
    double *last = s->v + (K - 1) * d;
    for (size_t i = 0; i < d; i++)
        last[i] = -s->dev[i];
    for (size_t k = 0; run->n_ranges && k < K; k++)
        zero_unmoved(run, s->v + k * d);
    double *g = s->g;
    for (size_t p = 0; p < K; p++)
        for (size_t q = p; q < K; q++) {
            double sum = 0.0;
            for (size_t i = 0; i < d; i++)
                sum += s->v[p * d + i] * s->v[q * d + i];
            g[p * K + q] = g[q * K + p] = r->factor * sum;
        }
    sivei_jacobi(g, K, s->w, s->ev);
    for (size_t j = 0; j < K; j++) {
        double e = s->ev[j];
        if (e > 0.0)
            *trace += e;
        if (e > 1.0)
            *clip += e - 1.0;
        s->ev[j] = e >= 1.0 ? 1.0 / e : e > 1e-12 ? (1.0 - sqrt(1.0 - e)) / e : 0.5;
    }
}

/* The step's normals, drawn as plain SGLD draws them (moved coordinates,
 * range by range, in chunks), then xi - factor V W diag(m) W' V' xi. */
static void full_normals(const sivei_run *run, noise_work *s, const noise_run *r,
                         sivei_pcg32 *noise)
{
    const size_t d = run->model.dim, K = (size_t)r->k;
    const size_t el = sivei_model_el(&run->model);
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i0 = b; i0 < e; i0 += SIVEI_NOISE_CHUNK) {
            size_t nb = e - i0 < SIVEI_NOISE_CHUNK ? e - i0 : SIVEI_NOISE_CHUNK;
            sivei_sampler_normals(run, noise, (unsigned char *)s->xi + i0 * el, nb);
        }
    }
    for (size_t k = 0; k < K; k++) {
        double sum = 0.0;
        for (size_t i = 0; i < d; i++)
            sum += s->v[k * d + i] * sivei_sampler_val(run, s->xi, i);
        s->y[k] = sum;
    }
    for (size_t j = 0; j < K; j++) { /* c = diag(m) W' y */
        double sum = 0.0;
        for (size_t k = 0; k < K; k++)
            sum += s->w[j * K + k] * s->y[k];
        s->c[j] = s->ev[j] * sum;
    }
    for (size_t k = 0; k < K; k++) { /* y = W c */
        double sum = 0.0;
        for (size_t j = 0; j < K; j++)
            sum += s->w[j * K + k] * s->c[j];
        s->y[k] = r->factor * sum;
    }
    for (size_t i = 0; i < d; i++) {
        double sum = 0.0;
        for (size_t k = 0; k < K; k++)
            sum += s->v[k * d + i] * s->y[k];
        if (run->model.dtype == SIVE_F32)
            ((float *)s->xi)[i] = (float)(((float *)s->xi)[i] - sum);
        else
            ((double *)s->xi)[i] -= sum;
    }
}

/* w->grad = D + grad L_n(theta*) (the gcv module ran first), D the
 * batch's difference.  Sub-batches 0..K-2 are called; the last one's
 * deviation is minus the sum of theirs (the deviations sum to zero). */
static int noise_gradient(sivei_run *run, sivei_work *w, void *rs, void *ws,
                          const sive_batch *gb)
{
    const noise_run *r = rs;
    noise_work *s = ws;
    const sive_model *m = &run->model;
    const void *full = sivei_gcv_full_gradient(run);
    for (size_t i = 0; i < m->dim; i++) {
        s->mean[i] = sivei_sampler_val(run, w->grad, i) - sivei_sampler_val(run, full, i);
        s->dev[i] = s->sq[i] = 0.0;
    }
    for (int64_t k = 0; k + 1 < r->k; k++) {
        int rc = sub_batch(run, s, r, gb, k, w->theta);
        if (rc)
            return rc;
    }
    /* the tail's sums of this chain (each chain runs on one worker) */
    const int tail = gb->step >= r->first;
    double clip = 0.0, trace = 0.0;
    if (s->v) {
        full_covariance(run, s, r, &clip, &trace);
    } else {
        for (size_t i = 0; i < m->dim; i++) {
            double x = (s->sq[i] + s->dev[i] * s->dev[i]) * r->factor; /* a^2 C_i / (2 eta) */
            s->scale[i] = x < 1.0 ? sqrt(1.0 - x) : 0.0;
        }
        sivei_chunks it = sivei_chunks_start(run); /* the moved coordinates */
        while (tail && sivei_chunks_next(&it, NULL, NULL))
            for (size_t i = it.i0; i < it.i0 + it.nb; i++) {
                double x = (s->sq[i] + s->dev[i] * s->dev[i]) * r->factor;
                trace += x;
                clip += x > 1.0 ? x - 1.0 : 0.0;
            }
    }
    if (tail) {
        r->clip[gb->chain - r->begin] += clip;
        r->trace[gb->chain - r->begin] += trace;
    }
    return 0;
}

/* SIVE_STAT_GRAD_NOISE_CLIPPED per finished chain and its summary (mean
 * over them, as the MEAN statistics), and a health line when it is
 * material (above 0.05). */
#define CLIPPED_NOTE 0.05
static int noise_note(sivei_run *run, void *state, sive_result *res)
{
    const noise_run *r = state;
    int32_t k = 0;
    for (int32_t c = res->begin; c < res->end; c++) {
        sivei_chain_out *ch = sivei_chain(res, c);
        if (ch->status != SIVE_CHAIN_OK)
            continue;
        k++;
        const double tr = r->trace[c - r->begin];
        ch->stat[SIVE_STAT_GRAD_NOISE_CLIPPED] = tr > 0.0 ? r->clip[c - r->begin] / tr : 0.0;
    }
    sivei_result_pool_mean(res, SIVE_STAT_GRAD_NOISE_CLIPPED);
    const double mean = res->summary[SIVE_STAT_GRAD_NOISE_CLIPPED];
    if (!(mean > CLIPPED_NOTE))
        return SIVE_OK;
    char line[400];
    snprintf(line, sizeof line,
             "grad_noise_compensation: %.0f %% of the estimated gradient noise a^2 C/(2 eta) "
             "clipped in the tail (grad_noise_clipped %.3g; mean over %d chains): where it "
             "exceeds the injected noise the chain runs hotter than the full-batch law; "
             "raise grad_batch%s, or use grad_extrapolate\n",
             100.0 * mean, mean, (int)k,
             run->opt.grad_noise_full ? ", use more sub-batches (K - 1 well above tr X)" : "");
    return sivei_health_append(res, line);
}

static int noise_step(sivei_run *run, sivei_work *w, void *rs, void *ws, sivei_pcg32 *noise,
                      int64_t m, double *gnorm, double *disp)
{
    (void)m;
    noise_work *s = ws;
    if (!s->v)
        return sivei_sgld_step_ex(run, w, noise, s->scale, NULL, gnorm, disp);
    full_normals(run, s, rs, noise);
    return sivei_sgld_step_ex(run, w, noise, NULL, s->xi, gnorm, disp);
}

const sivei_sampler sivei_sampler_gcv_noise = {
    .name = "grad_noise_compensation",
    .active = noise_active,
    .prepare = noise_prepare,
    .release = noise_release,
    .work_init = noise_work_init,
    .work_release = noise_work_release,
    .gradient = noise_gradient,
    .step = noise_step,
    .note = noise_note,
};
