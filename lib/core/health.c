/* Health flags: each a threshold, a plain-language text built from the
 * same constant, and a line with the numbers behind it. */
#include "probe_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The thresholds (documented in docs/theory.md).  Texts below are built
 * from these macros, so a change here changes the text too. */
#define LOW_ESS 100
#define HIGH_RHAT 1.05
#define NONSTATIONARY_Z 4
/* the correction C "dominates" when C > DOMINANT_C |lambda-hat| */
#define DOMINANT_C 10
/* the tail RMS displacement over h of a chain that left its chart, and of
 * one that barely moves (a tethered flat direction alone gives ~1) */
#define CHART_FAR 3
#define CHART_STILL 0.01
/* ... and whose displacement still grows: the last quarter of the tail
 * this much above the first (a chain at its stationary spread in a loss
 * curved in every direction, e.g. K1 at h >> t^(-1/2), stays far inside
 * h without being stuck: h plays no part there) */
#define CHART_GROWING 1.25
/* imprecise: the summary MCSE above this fraction of |lambda-hat| */
#define IMPRECISE_REL 0.3
/* radius_bound: d ln lambda / d ln h above this, and that many standard
 * errors above 0 (for a quadratic direction whose fluctuation the tether
 * cuts to a fraction r of its own, the bias is 1 - r^2 and the slope
 * 4(1 - r): 0.1 is a bias of ~5 %) */
#define RADIUS_SLOPE 0.1
#define RADIUS_Z 2
/* step_bias: the share of lambda-hat due to the finite step,
 * STEP_CURVATURE / (2 lambda-hat), above this */
#define STEP_SHARE 0.05
/* unstable: the largest SPIKE_FRAC of a chain's tail squared deviations
 * of Lbar carry more than SPIKE_SHARE of its variance.  A stable chain's
 * Lbar is near a Gamma law of shape lambda (t Lbar ~ Gamma(d/2) for a
 * quadratic loss): the top 0.1 % carry ~ 7 % of the variance at shape 1/2
 * (chi-square, 1 dof), less at larger shapes; on the ground-truth suite
 * with bad settings 1.4-5.6 % on every run within 10 % of lambda, 20-83 %
 * on the blow-ups it flags (docs/validation.md) */
#define SPIKE_FRAC 0.001
#define SPIKE_SHARE 0.2
/* unstable, second trigger (a climb): a chain whose tail mean loss sits
 * above the loss at theta* (Lbar_0, the chains' first evaluation, where
 * they start) by t (mean_T Lbar - Lbar_0) > CLIMB_HALF_D (1 + share) d/2,
 * share the step's (step_bias), and CLIMB_Z standard errors (the noise of
 * Lbar_0 and of the tail mean) above 0.  A tethered law near a minimum of
 * a loss C^2 at theta* has t (mean - L(theta*)) ~ lambda <= d/2
 * (equipartition, the tether lowers it), the finite step adds about its
 * share, a slope at theta* makes it negative; on the ground-truth suite
 * with bad settings (docs/validation.md) t (mean - Lbar_0) / ((1 + share)
 * d/2) is at most 0.98 on the runs within 10 % of lambda and 0.97 on the
 * stable ones further off (the full-rank quadratics L1 10-10 and mono k1
 * at their equipartition), 1.76 and 512 on the two smooth climbs whose
 * spike share stays low (1.13 and 1.33 on two spiky blow-ups other flags
 * catch) */
#define CLIMB_HALF_D 1.5
#define CLIMB_Z 4
/* unstable, third trigger (the variance far above the mean): a chain
 * whose lambda-hat (t^2 Var Lbar) exceeds VAR_MEAN (1 + share) times the
 * mean estimator t (mean_T Lbar - Lbar_0) + slope proxy, by VAR_MEAN_Z
 * standard errors.  Near a minimum of the loss t (L - L(theta*)) under
 * the tethered law is close to a Gamma law of shape lambda, whose
 * variance equals its mean (a tethered quadratic direction: variance r^2/2
 * against mean r/2, r <= 1, so below); the finite ULA step multiplies
 * the ratio by about 1 + share; a slope at theta* lowers the mean by about
 * the slope proxy t^2 h^2 ||g_0||^2 (Proposition 2 of the paper) and not
 * the variance.  So a stationary chain has a ratio of at most ~1 and the
 * limit 3 is a factor 3 above it (docs/theory.md, "Spikes"; on the
 * ground-truth suite, docs/validation.md) */
#define VAR_MEAN 3
#define VAR_MEAN_Z 4
/* start_dependent (anneal > 1): the hot-started and the cold-started
 * chains' lambda-hat or t times their mean tail loss apart by a Welch
 * test whose two-sided tail probability, doubled for the two (Bonferroni),
 * is that of |z| > START_Z under N(0, 1): at most 0.27 % of stationary
 * runs */
#define START_Z 3
#define STR_(x) #x
#define STR(x) STR_(x)

typedef struct flag_desc {
    uint32_t bit;
    const char *name, *text;
} flag_desc;

static const flag_desc flags[] = {
    {SIVE_FLAG_DIVERGED, "diverged",
     "a chain diverged (non-finite loss, gradient or parameter); the summary uses the others "
     "(lower base_lr, or check the model for NaN)"},
    {SIVE_FLAG_NEGATIVE_SIVE, "negative_sive",
     "the unclipped SIVE estimate is negative on some chain: the noise correction exceeds the "
     "measured variance (too few groups N, or too short a chain: raise groups or steps)"},
    {SIVE_FLAG_NONSTATIONARY, "nonstationary",
     "the tail window is not stationary: its two halves have mean losses more than "
     STR(NONSTATIONARY_Z) " standard errors apart (raise the burn-in or the steps, or lower h)"},
    {SIVE_FLAG_LOW_ESS, "low_ess",
     "the tail effective sample size is below " STR(LOW_ESS)
     " on some chain: the estimate is noisy (more steps; a larger base_lr only when step_bias is not raised)"},
    {SIVE_FLAG_HIGH_RHAT, "high_rhat",
     "split-Rhat above " STR(HIGH_RHAT) ": the chains disagree with each other (raise steps "
     "until they agree)"},
    {SIVE_FLAG_NOISY_CORRECTION, "noisy_correction",
     "the noise correction's uncertainty exceeds the estimate itself (raise N)"},
    {SIVE_FLAG_ABORTED, "aborted",
     "the run stopped early (callback error or cancel; see the run's error message)"},
    {SIVE_FLAG_DOMINANT_CORRECTION, "dominant_correction",
     "the noise correction is more than " STR(DOMINANT_C) " times the estimate: lambda-hat is "
     "a small difference of two large numbers, and a small error in the noise model moves "
     "it a lot (raise N*B_eval, or use control variates with a per-example model)"},
    {SIVE_FLAG_CHART, "chart",
     "a chain's mean tail displacement from theta* is above " STR(CHART_FAR) " h (it left "
     "its chart: lower c_h or h for a stronger tether) or below " STR(CHART_STILL) " h and "
     "still growing (it barely moves: raise base_lr or steps)"},
    {SIVE_FLAG_IMPRECISE, "imprecise",
     "the MCSE of lambda-hat is above " STR(IMPRECISE_REL) " times lambda-hat: the number "
     "is not determined (raise steps, or chains)"},
    {SIVE_FLAG_RADIUS_BOUND, "radius_bound",
     "the localisation radius cuts the fluctuations: d ln lambda-hat / d ln h, measured on "
     "the chains, is above " STR(RADIUS_SLOPE) " and " STR(RADIUS_Z) " standard errors above "
     "0, so lambda-hat grows with h (raise h or c_h until it stops); not assessed on a "
     "nonstationary or unstable tail"},
    {SIVE_FLAG_STEP_BIAS, "step_bias",
     "the step is large for the loss's curvature: a t mean ||g||^2 / (2 lambda-hat), the "
     "share of lambda-hat due to the finite step, is above " STR(STEP_SHARE) " (near the "
     "step's stability limit it grows without bound; lower base_lr, raise grad_batch, or "
     "use step_extrapolate)"},
    {SIVE_FLAG_UNSTABLE, "unstable",
     "a few spikes make the variance: on some chain the largest 0.1 % of the tail's squared "
     "deviations of the loss carry more than " STR(SPIKE_SHARE) " of its variance (a stable "
     "chain's: a few %), so lambda-hat measures excursions, not fluctuations: the step is "
     "near its stability limit where the chain went (lower base_lr, or h or c_h when the "
     "radius lets the chain slide to a more curved region); or, a climb, on some chain the "
     "tail mean loss sits above the loss at theta* by t (mean - L(theta*)) > "
     STR(CLIMB_HALF_D) " (1 + the step's share) d/2 (a stationary chain near a minimum: "
     "about lambda <= d/2), so the chain climbed to a loss level far above theta*'s and "
     "lambda-hat measures that level's fluctuations (lower base_lr, or h or c_h); or, on "
     "some chain, lambda-hat is more than " STR(VAR_MEAN) " (1 + the step's share) times "
     "the mean estimator t (mean - L(theta*)) + the slope proxy, where that is positive (near "
     "a minimum the two agree), so lambda-hat measures excursions the mean loss does not "
     "follow"},
    {SIVE_FLAG_START_DEPENDENT, "start_dependent",
     "the estimate depends on where the chains started: with anneal > 1 the chains started "
     "hot (annealed burn-in) and those started cold at theta* differ in lambda-hat or in "
     "their mean tail loss by a Welch test beyond |z| = " STR(START_Z) " (the smaller "
     "of the two tail probabilities, doubled), so some direction relaxes more slowly "
     "than the run is long (typically a flat, singular one the cold chains never reach) and "
     "lambda-hat averages two different answers (raise steps until they agree; a larger "
     "anneal spreads the hot chains further)"},
};

static const flag_desc *find(uint32_t bit)
{
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i].bit == bit)
            return &flags[i];
    return NULL;
}

const char *sive_flag_string(uint32_t flag)
{
    const flag_desc *f = find(flag);
    return f ? f->text : "";
}

const char *sive_flag_name(uint32_t flag)
{
    const flag_desc *f = find(flag);
    return f ? f->name : NULL;
}

/* A growing text; on allocation failure it stays NULL and *rc is set. */
typedef struct text {
    char *buf;
    size_t len;
    int rc;
} text;

/* The texts name the estimate the user is shown: "lambda-hat X" is the
 * reported lambda-hat (SIVE_STAT_SIVE, sive_result_lambda(): the chains'
 * estimates clipped at 0, then averaged).  The flags read the unclipped
 * summary (SIVE_STAT_SIVE_UNCLIPPED); when a negative chain makes the two
 * differ (as printed), the text adds it, named: "lambda-hat 2.805
 * (unclipped 1.753)". */
typedef struct lam_text {
    char s[96];
} lam_text;

static int lam_differs(const sive_result *r)
{
    char a[32], b[32];
    snprintf(a, sizeof a, "%.4g", r->summary[SIVE_STAT_SIVE]);
    snprintf(b, sizeof b, "%.4g", r->summary[SIVE_STAT_SIVE_UNCLIPPED]);
    return strcmp(a, b) != 0;
}

/* "lambda-hat X" for the reported (clipped) value, "lambda-hat X
 * (unclipped Y)" when the unclipped one prints differently. */
static lam_text lam_pair(double clipped, double unclipped)
{
    lam_text l;
    char a[32], b[32];
    snprintf(a, sizeof a, "%.4g", clipped);
    snprintf(b, sizeof b, "%.4g", unclipped);
    if (strcmp(a, b))
        snprintf(l.s, sizeof l.s, "lambda-hat %s (unclipped %s)", a, b);
    else
        snprintf(l.s, sizeof l.s, "lambda-hat %s", a);
    return l;
}

static lam_text lambda_hat(const sive_result *r)
{
    return lam_pair(r->summary[SIVE_STAT_SIVE], r->summary[SIVE_STAT_SIVE_UNCLIPPED]);
}

/* Append s to t whole, whatever its length. */
static void add_text(text *t, const char *s)
{
    if (t->rc)
        return;
    size_t n = strlen(s);
    char *nb = realloc(t->buf, t->len + n + 1);
    if (!nb) {
        t->rc = SIVE_E_NOMEM;
        return;
    }
    memcpy(nb + t->len, s, n + 1);
    t->buf = nb;
    t->len += n;
}

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append one formatted line (each line below is far shorter than 1 KiB). */
static void add(text *t, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (k >= 0)
        add_text(t, line);
}

static uint32_t chain_flags(const sive_result *r, text *t)
{
    uint32_t f = 0;
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        if (ch->status == SIVE_CHAIN_NOT_RUN)
            continue; /* another part of a split run computes it */
        if (ch->status == SIVE_CHAIN_DIVERGED) {
            f |= SIVE_FLAG_DIVERGED;
            add(t, "diverged: chain %d at step %lld (lower base_lr, or check the model for NaN)\n",
                (int)c, (long long)ch->stop_step);
        } else if (ch->status != SIVE_CHAIN_OK) {
            f |= SIVE_FLAG_ABORTED;
            if (!isnan(ch->stat[SIVE_STAT_SIVE]))
                add(t, "aborted: chain %d stopped at step %lld of %lld; its own estimates use "
                    "those steps and are left out of the summary\n", (int)c,
                    (long long)ch->stop_step, (long long)r->opt.steps);
        } else {
            if (ch->stat[SIVE_STAT_SIVE_UNCLIPPED] < 0.0) {
                f |= SIVE_FLAG_NEGATIVE_SIVE;
                add(t, "negative_sive: chain %d: unclipped SIVE %.4g < 0 (raw variance %.4g, "
                    "noise correction %.4g): raise groups or steps\n",
                    (int)c, ch->stat[SIVE_STAT_SIVE_UNCLIPPED],
                    ch->stat[SIVE_STAT_RAW_VARIANCE], ch->stat[SIVE_STAT_NOISE_CORRECTION]);
            }
            if (ch->stat[SIVE_STAT_ESS] < LOW_ESS) {
                f |= SIVE_FLAG_LOW_ESS;
                add(t, "low_ess: chain %d: tail ESS %.1f < %d: raise steps\n", (int)c,
                    ch->stat[SIVE_STAT_ESS], LOW_ESS);
            }
        }
    }
    if (f & SIVE_FLAG_ABORTED)
        add(t, "aborted: the run stopped early: %d of %d chains finished\n", (int)r->chains_ok,
            (int)(r->end - r->begin));
    return f;
}

/* The finished chains' extreme RMS_DISP_REL_H: the chain, and how many
 * chains lie beyond the limit on the same side (far: above it). */
typedef struct extreme {
    int32_t chain, count;
    double value;
} extreme;

static extreme disp_extreme(const sive_result *r, int far, double limit)
{
    extreme e = {-1, 0, NAN};
    for (int32_t c = r->begin; c < r->end; c++) {
        double v = sivei_chain(r, c)->stat[SIVE_STAT_RMS_DISP_REL_H];
        if (sivei_chain(r, c)->status != SIVE_CHAIN_OK || isnan(v))
            continue;
        /* still: only a chain that has not relaxed (NaN growth, a tail
         * too short to tell: kept) */
        if (!far && v < limit && sivei_disp_growth(r, sivei_chain(r, c)) <= CHART_GROWING)
            continue;
        if (far ? v > limit : v < limit)
            e.count++;
        if (e.chain < 0 || (far ? v > e.value : v < e.value)) {
            e.chain = c;
            e.value = v;
        }
    }
    return e;
}

/* A chain far outside its chart measures the loss elsewhere than at
 * theta*; one that does not move measures nothing of the chart's flat
 * directions.  The tether relaxes in h^2/eta steps. */
static uint32_t chart_flags(const sive_result *r, text *t)
{
    uint32_t f = 0;
    extreme far = disp_extreme(r, 1, CHART_FAR), still = disp_extreme(r, 0, CHART_STILL);
    const double relax = r->h * r->h / r->eta;
    if (far.count > 0) {
        f = SIVE_FLAG_CHART;
        add(t, "chart: chain %d: mean tail displacement %.3g h > %d h (%d of %d chains): the "
            "chain left its chart around theta*; lower c_h or h (a stronger tether)\n",
            (int)far.chain, far.value, CHART_FAR, (int)far.count, (int)r->chains_ok);
    }
    if (still.count > 0) {
        f = SIVE_FLAG_CHART;
        add(t, "chart: chain %d: mean tail displacement %.3g h < %g h and growing (%d of %d "
            "chains): the chain barely moves (the tether relaxes in h^2/eta = %.3g steps, the run has "
            "%lld steps); raise base_lr or steps\n", (int)still.chain, still.value, CHART_STILL,
            (int)still.count, (int)r->chains_ok, relax, (long long)r->opt.steps);
    }
    return f;
}

/* Spikes: a chain whose variance is made by a handful of excursions (the
 * step near its stability limit, after a slide along a valley to a more
 * curved region); docs/theory.md, "Health flags". */
static uint32_t spike_flags(const sive_result *r, text *t)
{
    int32_t worst = -1, count = 0;
    double share = 0.0;
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        if (ch->status != SIVE_CHAIN_OK)
            continue;
        const double v = sivei_spike_share(r, ch, SIVE_TRACE_LBAR, 0, SPIKE_FRAC);
        if (v < 0.0) {
            t->rc = SIVE_E_NOMEM;
            return 0;
        }
        if (!(v > SPIKE_SHARE))
            continue;
        count++;
        if (v > share)
            worst = c, share = v;
    }
    if (worst < 0)
        return 0;
    const sivei_chain_out *ch = sivei_chain(r, worst);
    const double g = sivei_spike_share(r, ch, SIVE_TRACE_GRAD_NORM, 1, SPIKE_FRAC);
    add(t, "unstable: chain %d: the largest %g %% of the tail's loss deviations carry %.0f %% of "
        "its variance (%d of %d chains above %.0f %%; of ||g||^2's variance %.0f %%): "
        "%s is made by spikes; lower base_lr (now %g), or h or c_h (h = %.4g; "
        "mean tail displacement %.3g h)\n", (int)worst, 100.0 * SPIKE_FRAC, 100.0 * share,
        (int)count, (int)r->chains_ok, 100.0 * SPIKE_SHARE, 100.0 * g,
        lambda_hat(r).s, r->opt.base_lr, r->h,
        ch->stat[SIVE_STAT_RMS_DISP_REL_H]);
    return SIVE_FLAG_UNSTABLE;
}

/* The loss at theta*, where every chain starts: the finished chains'
 * first evaluation Lbar_0 averaged, and the variance of that mean (each
 * chain's s2_0 / N).  NaN when no chain has one. */
static double start_loss(const sive_result *r, double *var)
{
    double sum = 0.0, v = 0.0;
    int k = 0;
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        if (ch->status != SIVE_CHAIN_OK || ch->steps_run < 1 || !ch->trace[SIVE_TRACE_LBAR] ||
            !isfinite(ch->trace[SIVE_TRACE_LBAR][0]))
            continue;
        sum += ch->trace[SIVE_TRACE_LBAR][0];
        v += ch->trace[SIVE_TRACE_S2][0] / (double)r->opt.groups;
        k++;
    }
    *var = k ? v / ((double)k * k) : NAN;
    return k ? sum / k : NAN;
}

/* A climb: the chain sits at a loss level far above theta*'s and
 * fluctuates there smoothly (no spikes); docs/theory.md, "Spikes". */
static uint32_t climb_flags(const sive_result *r, text *t)
{
    double var0 = NAN;
    const double l0 = start_loss(r, &var0), half_d = 0.5 * (double)r->moved, tt = r->opt.t;
    const double lam = r->summary[SIVE_STAT_SIVE_UNCLIPPED],
                 share = r->summary[SIVE_STAT_STEP_CURVATURE] / (2.0 * lam),
                 limit = CLIMB_HALF_D * (1.0 + (share > 0.0 && lam > 0.0 ? share : 0.0)) * half_d;
    if (!isfinite(l0) || !(half_d > 0.0))
        return 0;
    int32_t worst = -1, count = 0;
    double excess = 0.0, z = 0.0;
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        if (ch->status != SIVE_CHAIN_OK)
            continue;
        /* t (mean - Lbar_0) and its standard error: Lbar_0's, and the
         * tail mean's (t^2 Var Lbar / ESS) */
        const double e = tt * (ch->stat[SIVE_STAT_TAIL_MEAN_LOSS] - l0),
                     se = sqrt(tt * tt * var0 + ch->stat[SIVE_STAT_RAW_VARIANCE] /
                                                    ch->stat[SIVE_STAT_ESS]);
        if (!(e > limit && e > CLIMB_Z * se))
            continue;
        count++;
        if (e > excess)
            worst = c, excess = e, z = e / se;
    }
    if (worst < 0)
        return 0;
    add(t, "unstable: chain %d: t (mean tail loss - loss at theta*) = %.4g = %.3g d/2 "
        "(%.0f standard errors; %d of %d chains above %.3g d/2 = %g (1 + step share %.3g) d/2, "
        "d = %llu; a stationary chain "
        "near a minimum: about lambda <= d/2): the chain climbed to a loss level far above "
        "theta*'s and %s measures its fluctuations there; lower base_lr (now "
        "%g), or h or c_h (h = %.4g)\n", (int)worst, excess, excess / half_d, z, (int)count,
        (int)r->chains_ok, limit / half_d, CLIMB_HALF_D, limit / half_d / CLIMB_HALF_D - 1.0,
        (unsigned long long)r->moved, lambda_hat(r).s, r->opt.base_lr, r->h);
    return SIVE_FLAG_UNSTABLE;
}

/* The variance far above the mean: lambda-hat measures excursions (even
 * or spiky) that the mean loss does not follow, not the fluctuations of
 * a chain near its minimum; docs/theory.md, "Spikes". */
static uint32_t var_mean_flags(const sive_result *r, text *t)
{
    double var0 = NAN;
    const double l0 = start_loss(r, &var0), tt = r->opt.t;
    const double lam = r->summary[SIVE_STAT_SIVE_UNCLIPPED],
                 share = r->summary[SIVE_STAT_STEP_CURVATURE] / (2.0 * lam),
                 k = VAR_MEAN * (1.0 + (share > 0.0 && lam > 0.0 ? share : 0.0));
    if (!isfinite(l0))
        return 0;
    int32_t worst = -1, count = 0;
    double ratio = 0.0, z = 0.0, mean_est = 0.0, slope = 0.0;
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        if (ch->status != SIVE_CHAIN_OK)
            continue;
        const double v = ch->stat[SIVE_STAT_SIVE_UNCLIPPED], sv = ch->stat[SIVE_STAT_MCSE],
                     p = fmax(ch->stat[SIVE_STAT_SLOPE_PROXY], 0.0),
                     e = tt * (ch->stat[SIVE_STAT_TAIL_MEAN_LOSS] - l0),
                     se2 = tt * tt * var0 + ch->stat[SIVE_STAT_RAW_VARIANCE] /
                                                ch->stat[SIVE_STAT_ESS],
                     excess = v - k * (e + p), se = sqrt(sv * sv + k * k * se2);
        /* a chain that went downhill past the slope proxy (theta* is not
         * near a minimum: mid-training) is outside the premise; its
         * variance includes the descent, which the flag does not judge */
        if (!(e + p > 0.0) || !(excess > VAR_MEAN_Z * se))
            continue;
        count++;
        const double q = e + p > 0.0 ? v / (e + p) : INFINITY;
        if (worst < 0 || q > ratio)
            worst = c, ratio = q, z = excess / se, mean_est = e, slope = p;
    }
    if (worst < 0)
        return 0;
    add(t, "unstable: chain %d: lambda-hat %.4g is %.3g times the mean estimator t (mean tail "
        "loss - loss at theta*) + slope proxy = %.4g + %.3g (above %.3g = %d (1 + step share "
        "%.3g), by %.0f standard errors; %d of %d chains; near a minimum the two agree): "
        "lambda-hat measures excursions the mean loss does not follow; lower base_lr (now "
        "%g), or h or c_h (h = %.4g)\n", (int)worst, sivei_chain(r, worst)->stat[SIVE_STAT_SIVE_UNCLIPPED],
        ratio, mean_est, slope, k, VAR_MEAN, k / VAR_MEAN - 1.0, z, (int)count,
        (int)r->chains_ok, r->opt.base_lr, r->h);
    return SIVE_FLAG_UNSTABLE;
}

/* Precision, radius and step, from the summaries (docs/theory.md,
 * "Localisation and step"). */
static uint32_t geometry_flags(const sive_result *r, int stationary, text *t)
{
    uint32_t f = 0;
    const double *s = r->summary, lam = s[SIVE_STAT_SIVE_UNCLIPPED];
    if (s[SIVE_STAT_MCSE] > IMPRECISE_REL * fabs(lam)) {
        f |= SIVE_FLAG_IMPRECISE;
        add(t, "imprecise: %s has MCSE %.3g (%.1f %%%s, above %.0f %%): raise steps "
            "or chains\n", lambda_hat(r).s, s[SIVE_STAT_MCSE],
            100.0 * s[SIVE_STAT_MCSE] / fabs(lam), lam_differs(r) ? " of the unclipped" : "",
            100.0 * IMPRECISE_REL);
    }
    if (!(lam > 0.0))
        return f;
    const double e = s[SIVE_STAT_DLAMBDA_DLOG_H] / lam, se = s[SIVE_STAT_DLAMBDA_DLOG_H_SE] / lam;
    /* a tail that drifts moves R and Lbar together: no slope to read */
    if (stationary && e > RADIUS_SLOPE && e > RADIUS_Z * se) {
        f |= SIVE_FLAG_RADIUS_BOUND;
        add(t, "radius_bound: d ln lambda-hat / d ln h = %.3g +- %.2g at h = %.4g: the radius "
            "cuts the fluctuations (lambda-hat would move by ~%.0f %% for a 10 %% larger h); "
            "raise h or c_h\n", e, se, r->h, 100.0 * (pow(1.1, e) - 1.0));
    }
    const double share = s[SIVE_STAT_STEP_CURVATURE] / (2.0 * lam);
    if (share > STEP_SHARE && !r->opt.metropolis) { /* metropolis: no step bias */
        f |= SIVE_FLAG_STEP_BIAS;
        add(t, "step_bias: a t mean||g||^2 / (2 lambda-hat) = %.3g at base_lr %g: the finite "
            "step adds ~%.0f %% to lambda-hat%s; lower base_lr%s, or use step_extrapolate\n",
            share, r->opt.base_lr, 100.0 * share,
            share > 1.0 ? " (a quadratic direction at share 1 is at 1/3 of its stability limit)"
                        : "",
            r->n_examples > 0 ? " or raise grad_batch" : "");
    }
    return f;
}

/* The start test (anneal > 1; docs/theory.md, "Annealed burn-in"):
 * SIVE_STAT_START_Z is set by sivei_result_health before the flags. */
static uint32_t start_flag(const sive_result *r, const sivei_start *st, text *t)
{
    if (!isfinite(st->zmin))
        return 0;
    /* the groups' reported lambda-hat, and the unclipped means the test
     * compares where they differ */
    lam_text g[2];
    for (int k = 0; k < 2; k++) {
        double sum = 0.0;
        int n = 0;
        for (int32_t c = r->begin; c < r->end; c++) {
            const sivei_chain_out *ch = sivei_chain(r, c);
            if (ch->status == SIVE_CHAIN_OK && sivei_anneal_cold(&r->opt, c) == k)
                sum += ch->stat[SIVE_STAT_SIVE], n++;
        }
        g[k] = lam_pair(n ? sum / n : NAN, st->mean[0][k]);
    }
    char parts[400];
    snprintf(parts, sizeof parts,
             "the chains started hot read %s, those started cold at theta* %s (z %+.2f, %.0f "
             "dof), t times their mean tail loss differs by %+.4g (z %+.2f, %.0f dof)",
             g[0].s, g[1].s + strlen("lambda-hat "), st->z[0], st->dof[0],
             st->mean[1][0] - st->mean[1][1], st->z[1], st->dof[1]);
    if (!(fabs(st->zmin) > START_Z)) {
        add(t, "anneal %g: %s: start z %+.2f (start_dependent above |z| = %d)\n", r->opt.anneal,
            parts, st->zmin, START_Z);
        return 0;
    }
    add(t, "start_dependent: anneal %g: %s: start z %+.2f (|z| > %d): the two starts have "
        "not reached the same law, so some direction relaxes more slowly than the run is long "
        "(a flat or singular direction the cold chains have not reached, or a well the hot "
        "ones froze into); raise steps until the two agree, or anneal to spread the hot "
        "chains further\n", r->opt.anneal, parts, st->zmin, START_Z);
    return SIVE_FLAG_START_DEPENDENT;
}

static uint32_t summary_flags(const sive_result *r, double worst_z, int32_t worst_chain,
                              const sivei_start *st, text *t)
{
    uint32_t f = 0;
    const double *s = r->summary;
    if (r->chains_ok == 0)
        return 0;
    if (worst_z > NONSTATIONARY_Z) {
        f |= SIVE_FLAG_NONSTATIONARY;
        add(t, "nonstationary: chain %d: the two halves of the tail differ in mean loss by "
            "%.1f standard errors: raise burn_in or steps\n",
            (int)worst_chain, worst_z);
    }
    if (s[SIVE_STAT_RHAT] > HIGH_RHAT) {
        f |= SIVE_FLAG_HIGH_RHAT;
        add(t, "high_rhat: split-Rhat %.3f > %.2f: the chains disagree; raise steps\n",
            s[SIVE_STAT_RHAT], HIGH_RHAT);
    }
    const double lam = fabs(s[SIVE_STAT_SIVE_UNCLIPPED]), corr = s[SIVE_STAT_NOISE_CORRECTION];
    if (s[SIVE_STAT_NOISE_CORRECTION_STD] > lam) {
        f |= SIVE_FLAG_NOISY_CORRECTION;
        add(t, "noisy_correction: noise correction std %.4g exceeds |SIVE%s| %.4g: raise "
            "groups\n", s[SIVE_STAT_NOISE_CORRECTION_STD], lam_differs(r) ? " unclipped" : "",
            lam);
    }
    if (corr > DOMINANT_C * lam) {
        f |= SIVE_FLAG_DOMINANT_CORRECTION;
        add(t, "dominant_correction: noise correction %.4g is %.0f times |SIVE%s| %.4g: "
            "raise groups or eval_batch, or control_variate (per-example models)\n", corr,
            lam > 0.0 ? corr / lam : INFINITY, lam_differs(r) ? " unclipped" : "", lam);
    }
    f |= start_flag(r, st, t);
    f |= chart_flags(r, t);
    /* spikes: the slope would be the excursions' covariance with the
     * displacement, not the radius's cut (their line says what to change) */
    text spikes = {.buf = calloc(1, 1)};
    if (!spikes.buf) {
        t->rc = SIVE_E_NOMEM;
        return f;
    }
    const uint32_t u = spike_flags(r, &spikes) | climb_flags(r, &spikes) |
                       var_mean_flags(r, &spikes);
    f |= geometry_flags(r, !(f & SIVE_FLAG_NONSTATIONARY) && !u, t) | u;
    add_text(t, spikes.buf); /* up to three lines: longer than add()'s one */
    if (spikes.rc)
        t->rc = spikes.rc;
    free(spikes.buf);
    return f;
}

int sivei_result_health(sive_result *r, double worst_z, int32_t worst_chain)
{
    text t = {.buf = calloc(1, 1)};
    if (!t.buf)
        return SIVE_E_NOMEM;
    sivei_start st;
    t.rc = sivei_start_test(r, &st);
    r->summary[SIVE_STAT_START_Z] = st.zmin;
    r->summary[SIVE_STAT_START_Z_LAMBDA] = st.z[0];
    r->summary[SIVE_STAT_START_Z_MEAN] = st.z[1];
    uint32_t f = chain_flags(r, &t);
    f |= summary_flags(r, worst_z, worst_chain, &st, &t);
    if (t.rc) {
        free(t.buf);
        return t.rc;
    }
    r->flags = f;
    r->health = t.buf;
    return SIVE_OK;
}

int sivei_text_append(char **s, const char *src, size_t n)
{
    size_t old = *s ? strlen(*s) : 0;
    char *t = realloc(*s, old + n + 1);
    if (!t)
        return SIVE_E_NOMEM;
    memcpy(t + old, src, n);
    t[old + n] = '\0';
    *s = t;
    return SIVE_OK;
}

/* A run's note: in the health text and in the notes a result file keeps. */
int sivei_health_append(sive_result *r, const char *line)
{
    int rc = sivei_text_append(&r->notes, line, strlen(line));
    return rc ? rc : sivei_text_append(&r->health, line, strlen(line));
}

int sivei_result_add_notes(sive_result *r, const char *text)
{
    const int rc = text && *text ? sivei_health_append(r, text) : SIVE_OK;
    if (!rc)
        sivei_radius_check_reflag(r); /* the one flag a note carries */
    return rc;
}
