/* Summaries over chains, multi-chain ESS, split-Rhat and health flags. */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Thresholds behind the health flags (documented in docs/diagnostics.md). */
#define LOW_ESS 100.0
#define HIGH_RHAT 1.05
#define NONSTATIONARY_Z 4.0

const char *sive_flag_string(uint32_t flag)
{
    switch (flag) {
    case SIVE_FLAG_DIVERGED:
        return "a chain diverged (non-finite loss, gradient or parameter); the summary uses the others";
    case SIVE_FLAG_NEGATIVE_SIVE:
        return "the unclipped SIVE estimate is negative on some chain: the noise correction exceeds the "
               "measured variance (too few groups N, or too short a chain)";
    case SIVE_FLAG_NONSTATIONARY:
        return "the tail window is not stationary: its two halves have different mean losses "
               "(raise the burn-in or the steps, or lower h)";
    case SIVE_FLAG_LOW_ESS:
        return "the tail effective sample size is below 100 on some chain: the estimate is noisy "
               "(more steps, or a larger base_lr)";
    case SIVE_FLAG_HIGH_RHAT:
        return "split-Rhat above 1.05: the chains disagree with each other";
    case SIVE_FLAG_NOISY_CORRECTION:
        return "the noise correction's uncertainty exceeds the estimate itself (raise N)";
    case SIVE_FLAG_ABORTED:
        return "the run stopped early (callback error or cancel)";
    default:
        return "";
    }
}

/* |z| of the difference between the means of the two halves of x. */
static double halves_z(const double *x, size_t n)
{
    size_t h = n / 2;
    double m1, v1, m2, v2;
    sive_mean_var(x, h, &m1, &v1);
    sive_mean_var(x + (n - h), h, &m2, &v2);
    double se = sqrt(sive_batch_means_var(x, h) + sive_batch_means_var(x + (n - h), h));
    if (!(se > 0.0))
        return m1 == m2 ? 0.0 : INFINITY;
    return fabs(m1 - m2) / se;
}

static int append(char **buf, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int append(char **buf, size_t *len, const char *fmt, ...)
{
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (k < 0)
        return SIVE_OK;
    size_t add = strlen(line);
    char *nb = realloc(*buf, *len + add + 1);
    if (!nb)
        return SIVE_E_NOMEM;
    memcpy(nb + *len, line, add + 1);
    *buf = nb;
    *len += add;
    return SIVE_OK;
}

int sive_result_summarise(sive_result *r)
{
    int32_t K = r->chains;
    int rc = SIVE_OK;
    double **tails = calloc((size_t)K, sizeof *tails);
    if (!tails)
        return SIVE_E_NOMEM;
    size_t n = 0;
    int32_t ok = 0;
    double worst_z = 0.0;
    int32_t worst_z_chain = -1;
    for (int32_t c = 0; c < K && rc == SIVE_OK; c++) {
        sive_chain_out *ch = &r->c[c];
        if (ch->status != SIVE_CHAIN_OK)
            continue;
        rc = sive_chain_estimate(r, ch);
        if (rc)
            break;
        /* With stride 1 the tail is a contiguous piece of the trace: borrow
         * it instead of copying (the estimators' scratch is what sets the
         * peak memory of long runs). */
        if (r->stride == 1) {
            n = (size_t)(r->steps - r->tail_start);
            tails[ok] = ch->trace[SIVE_TRACE_LBAR] + r->tail_start;
        } else {
            tails[ok] = sive_tail_copy(r, ch, SIVE_TRACE_LBAR, &n);
        }
        if (!tails[ok]) {
            rc = SIVE_E_NOMEM;
            break;
        }
        double z = halves_z(tails[ok], n);
        if (z > worst_z || worst_z_chain < 0) {
            worst_z = z;
            worst_z_chain = c;
        }
        ok++;
    }
    r->chains_ok = ok;

    /* Per-chain and multi-chain ESS share the chains' autocorrelations. */
    double ess_multi = NAN;
    if (rc == SIVE_OK && ok > 0) {
        double *each = malloc((size_t)ok * sizeof *each);
        if (!each) {
            rc = SIVE_E_NOMEM;
        } else {
            rc = sive_ess_chains((const double *const *)tails, (size_t)ok, n, each, &ess_multi);
            if (rc == SIVE_E_INVALID_ARG)
                rc = SIVE_OK; /* non-finite tail: ESS stays NaN */
            for (int32_t c = 0, k = 0; c < K; c++)
                if (r->c[c].status == SIVE_CHAIN_OK)
                    r->c[c].stat[SIVE_STAT_ESS] = each[k++];
            free(each);
        }
    }

    for (int s = 0; s < SIVE_STAT_COUNT_ && rc == SIVE_OK; s++) {
        double sum = 0.0, sum2 = 0.0;
        for (int32_t c = 0; c < K; c++)
            if (r->c[c].status == SIVE_CHAIN_OK)
                sum += r->c[c].stat[s];
        double mean = ok ? sum / ok : NAN;
        for (int32_t c = 0; c < K; c++)
            if (r->c[c].status == SIVE_CHAIN_OK) {
                double dv = r->c[c].stat[s] - mean;
                sum2 += dv * dv;
            }
        r->summary[s] = mean;
        r->spread[s] = ok >= 2 ? sqrt(sum2 / (ok - 1)) : NAN;
    }
    if (rc == SIVE_OK && ok > 0) {
        /* Standard errors of an average over chains combine in quadrature. */
        const int se_stats[] = {SIVE_STAT_MCSE, SIVE_STAT_NOISE_CORRECTION_STD,
                                SIVE_STAT_NOISE_CORRECTION_STD_GAUSS};
        for (size_t k = 0; k < sizeof se_stats / sizeof se_stats[0]; k++) {
            double q = 0.0;
            for (int32_t c = 0; c < K; c++)
                if (r->c[c].status == SIVE_CHAIN_OK)
                    q += r->c[c].stat[se_stats[k]] * r->c[c].stat[se_stats[k]];
            r->summary[se_stats[k]] = sqrt(q) / ok;
        }
        r->summary[SIVE_STAT_ESS] = ess_multi;
        r->summary[SIVE_STAT_RHAT] = sive_split_rhat((const double *const *)tails, (size_t)ok, n);
    }
    if (r->stride != 1)
        for (int32_t c = 0; c < ok; c++)
            free(tails[c]);
    free(tails);
    if (rc)
        return rc;

    /* Health flags, each with the numbers behind it. */
    size_t len = 0;
    char *msg = calloc(1, 1);
    if (!msg)
        return SIVE_E_NOMEM;
    uint32_t f = 0;
    for (int32_t c = 0; c < K && rc == SIVE_OK; c++) {
        const sive_chain_out *ch = &r->c[c];
        if (ch->status == SIVE_CHAIN_DIVERGED) {
            f |= SIVE_FLAG_DIVERGED;
            rc = append(&msg, &len, "chain %d diverged at step %lld\n", (int)c,
                        (long long)ch->stop_step);
        } else if (ch->status != SIVE_CHAIN_OK) {
            f |= SIVE_FLAG_ABORTED;
        } else {
            if (ch->stat[SIVE_STAT_SIVE_UNCLIPPED] < 0.0) {
                f |= SIVE_FLAG_NEGATIVE_SIVE;
                rc = append(&msg, &len,
                            "chain %d: unclipped SIVE %.4g < 0 (raw variance %.4g, noise correction %.4g)\n",
                            (int)c, ch->stat[SIVE_STAT_SIVE_UNCLIPPED],
                            ch->stat[SIVE_STAT_RAW_VARIANCE], ch->stat[SIVE_STAT_NOISE_CORRECTION]);
            }
            if (rc == SIVE_OK && ch->stat[SIVE_STAT_ESS] < LOW_ESS) {
                f |= SIVE_FLAG_LOW_ESS;
                rc = append(&msg, &len, "chain %d: tail ESS %.1f < %.0f\n", (int)c,
                            ch->stat[SIVE_STAT_ESS], LOW_ESS);
            }
        }
    }
    if (rc == SIVE_OK && (f & SIVE_FLAG_ABORTED))
        rc = append(&msg, &len, "the run stopped early: %d of %d chains finished\n", (int)ok, (int)K);
    if (rc == SIVE_OK && ok > 0 && worst_z > NONSTATIONARY_Z) {
        f |= SIVE_FLAG_NONSTATIONARY;
        rc = append(&msg, &len,
                    "chain %d: the two halves of the tail differ in mean loss by %.1f standard errors\n",
                    (int)worst_z_chain, worst_z);
    }
    if (rc == SIVE_OK && ok > 0 && r->summary[SIVE_STAT_RHAT] > HIGH_RHAT) {
        f |= SIVE_FLAG_HIGH_RHAT;
        rc = append(&msg, &len, "split-Rhat %.3f > %.2f\n", r->summary[SIVE_STAT_RHAT], HIGH_RHAT);
    }
    if (rc == SIVE_OK && ok > 0 &&
        r->summary[SIVE_STAT_NOISE_CORRECTION_STD] > fabs(r->summary[SIVE_STAT_SIVE_UNCLIPPED])) {
        f |= SIVE_FLAG_NOISY_CORRECTION;
        rc = append(&msg, &len, "noise correction std %.4g exceeds |SIVE| %.4g\n",
                    r->summary[SIVE_STAT_NOISE_CORRECTION_STD],
                    fabs(r->summary[SIVE_STAT_SIVE_UNCLIPPED]));
    }
    if (rc) {
        free(msg);
        return rc;
    }
    r->flags = f;
    r->health = msg;
    return SIVE_OK;
}
