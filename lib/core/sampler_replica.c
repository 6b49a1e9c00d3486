/* Replica exchange, parallel tempering in t (experimental options
 * SIVE_OPT_REPLICAS = R >= 2, SIVE_OPT_REPLICA_RATIO = q > 1;
 * docs/theory.md "Replica exchange"; after Swendsen & Wang 1986, Geyer
 * 1991, and the deterministic even-odd schedule of Syed, Bouchard-Cote,
 * Deligiannidis & Doucet, "Non-reversible parallel tempering: a scalable
 * highly parallel MCMC scheme", JRSS B 2022).
 *
 * Each chain holds R states; rung k targets
 *   pi_k(theta) ~ exp(-t_k L(theta) - |theta - theta*|^2/(2 h^2)),
 * t_k = t / q^k (only the likelihood is tempered).  Every step moves each
 * rung with the metropolis sampler's kernel at t_k, which keeps pi_k
 * (sampler_mala.c), then proposes to swap the states of the pairs
 * (k, k+1), k = m mod 2, m mod 2 + 2, ..., accepted with
 *   min(1, pi_k(theta_{k+1}) pi_{k+1}(theta_k) / (pi_k(theta_k) pi_{k+1}(theta_{k+1})))
 *   = min(1, exp((t_k - t_{k+1}) (L(theta_k) - L(theta_{k+1})))),
 * the tether cancelling.  Each swap is a Metropolis move on the product
 * law prod_k pi_k, so the product is stationary for every step's kernel
 * and rung 0's marginal is the tethered law at t, exactly; only rung 0 is
 * measured.  Alternating the even and odd pairs (rather than drawing a
 * pair) makes the ladder's index process non-reversible, which cuts the
 * round trip from O(R^2) to O(R) steps.  The exact losses come from the
 * rungs' own moves: a swap costs no gradient call, a step R of them. */
#include "replica.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUNGS 64 /* the option's bound */

struct sivei_replica {
    int R;
    int64_t tries[MAX_RUNGS - 1], acc[MAX_RUNGS - 1]; /* per pair, over the tail */
};

struct sivei_replica_run {
    int32_t count;
    int R;
    int64_t *tries, *acc; /* [chain][pair] at the chain's last step */
    double *move;         /* [chain][rung] the rung's own tail acceptance */
    double *log_a;        /* [chain][rung] the log of the rung's frozen step */
};

int sivei_replica_on(const sivei_options *o) { return o->replicas > 1; }

int sivei_replica_refuse(const sivei_options *o, char *err)
{
    if (!sivei_replica_on(o))
        return SIVE_OK;
    if (!o->metropolis)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "replicas %lld: replica exchange swaps on the exact loss: set "
                         "metropolis 1",
                         (long long)o->replicas);
    if (o->auto_step > 0 || o->delayed_rejection > 1)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "replicas %lld: not with auto_step or delayed_rejection",
                         (long long)o->replicas);
    return SIVE_OK;
}

double sivei_replica_t(const sivei_options *o, double t0, int k)
{
    return k ? t0 * pow(o->replica_ratio, -(double)k) : t0;
}

sivei_replica_run *sivei_replica_run_new(const sivei_options *o, int32_t chains)
{
    sivei_replica_run *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    const size_t n = chains > 0 ? (size_t)chains : 1, R = (size_t)o->replicas;
    r->count = chains;
    r->R = (int)R;
    r->tries = calloc(n * (R - 1), sizeof *r->tries);
    r->acc = calloc(n * (R - 1), sizeof *r->acc);
    r->move = malloc(n * R * sizeof *r->move);
    r->log_a = calloc(n * R, sizeof *r->log_a);
    if (!r->tries || !r->acc || !r->move || !r->log_a) {
        sivei_replica_run_free(r);
        return NULL;
    }
    for (size_t i = 0; i < n * R; i++)
        r->move[i] = NAN;
    return r;
}

void sivei_replica_run_free(sivei_replica_run *r)
{
    if (r) {
        free(r->tries);
        free(r->acc);
        free(r->move);
        free(r->log_a);
    }
    free(r);
}

sivei_replica *sivei_replica_new(const sivei_options *o)
{
    sivei_replica *x = calloc(1, sizeof *x);
    if (x)
        x->R = (int)o->replicas;
    return x;
}

void sivei_replica_free(sivei_replica *x) { free(x); }

void sivei_replica_chain_start(sivei_replica *x)
{
    memset(x->tries, 0, sizeof x->tries);
    memset(x->acc, 0, sizeof x->acc);
}

static double uniform(sivei_pcg32 *noise)
{
    return (double)(sivei_pcg32_next64(noise) >> 11) * 0x1p-53;
}

void sivei_replica_swap(const sivei_run *run, sivei_replica *x, int64_t m, double t0,
                        const double *loss, sivei_pcg32 *noise,
                        sivei_replica_exchange exchange, void *ctx)
{
    const int tail = m >= (int64_t)floor(run->opt.burn_in * (double)run->opt.steps);
    for (int k = (int)(m % 2); k + 1 < x->R; k += 2) {
        const double dt = sivei_replica_t(&run->opt, t0, k) -
                          sivei_replica_t(&run->opt, t0, k + 1);
        const double la = dt * (loss[k] - loss[k + 1]);
        const int acc = isfinite(la) && log(uniform(noise)) < la;
        if (acc)
            exchange(ctx, k);
        x->tries[k] += tail;
        x->acc[k] += tail && acc;
    }
}

void sivei_replica_chain_end(sivei_replica_run *r, int32_t slot, const sivei_replica *x,
                             const double *acc)
{
    const int P = r->R - 1;
    for (int k = 0; k < P; k++) {
        r->tries[(size_t)slot * P + k] = x->tries[k];
        r->acc[(size_t)slot * P + k] = x->acc[k];
    }
    for (int k = 0; k < r->R; k++) {
        r->move[(size_t)slot * r->R + k] = acc[k];
        r->log_a[(size_t)slot * r->R + k] = acc[r->R + k];
    }
}

/* "a b c" of n values (format fmt) into buf (len). */
static int list(char *buf, size_t len, const char *fmt, const double *v, int n)
{
    int used = 0;
    for (int k = 0; k < n && (size_t)used < len; k++) {
        used += snprintf(buf + used, len - (size_t)used, "%s", k ? " " : "");
        if ((size_t)used < len)
            used += snprintf(buf + used, len - (size_t)used, fmt, v[k]);
    }
    return used;
}

int sivei_replica_note(const sivei_run *run, sivei_replica_run *r, sive_result *res)
{
    const int R = r->R, P = R - 1;
    double swap[MAX_RUNGS], move[MAX_RUNGS], la[MAX_RUNGS];
    int32_t done = 0;
    for (int k = 0; k < R; k++)
        swap[k] = move[k] = la[k] = 0.0;
    for (int32_t c = 0; c < r->count; c++) {
        if (!isfinite(r->move[(size_t)c * R]))
            continue; /* did not finish */
        done++;
        for (int k = 0; k < P; k++) {
            const int64_t n = r->tries[(size_t)c * P + k];
            swap[k] += n ? (double)r->acc[(size_t)c * P + k] / (double)n : 0.0;
        }
        for (int k = 0; k < R; k++) {
            move[k] += r->move[(size_t)c * R + k];
            la[k] += r->log_a[(size_t)c * R + k];
        }
    }
    if (!done)
        return SIVE_OK;
    for (int k = 0; k < R; k++) {
        swap[k] /= done;
        move[k] /= done;
        la[k] = exp(la[k] / done);
    }
    char line[3072], a[700], b[700], c[900];
    list(a, sizeof a, "%.3f", swap, P);
    list(b, sizeof b, "%.3f", move, R);
    list(c, sizeof c, "%.3g", la, R);
    const int64_t K = run->opt.leapfrog > 1 ? run->opt.leapfrog : 1;
    snprintf(line, sizeof line,
             "replicas %d: t_k = t/%g^k down to t/%.4g = %.4g; tail swap acceptance of pairs "
             "(0,1) .. (%d,%d), mean over %d chains: %s; the rungs' own tail acceptance: %s; "
             "their steps a_k (geometric mean over the chains; at the typical displacement): "
             "%s; %lld gradient calls per step (%d rungs x %lld)\n",
             R, run->opt.replica_ratio, pow(run->opt.replica_ratio, (double)P),
             sivei_replica_t(&run->opt, run->opt.t, P), P - 1, P, (int)done, a, b, c,
             (long long)(R * K), R, (long long)K);
    return sivei_health_append(res, line);
}
