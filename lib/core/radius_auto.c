/* The radius from the loss (c_h = 0, docs/theory.md "Radius from the
 * loss"): short pilot runs on common random numbers at growing h, each
 * reading d ln lambda-hat / d ln h off its own chains (diag_geometry.c),
 * until the radius no longer moves lambda-hat. */
#include "probe_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Accept a level when e + AUTO_Z se <= AUTO_SLOPE, e = d ln lambda / d ln h:
 * for a quadratic direction the bias the radius leaves is about e/2, so
 * 0.04 bounds it by ~2 % with the pilot's noise included. */
#define AUTO_SLOPE 0.04
#define AUTO_Z SIVEI_PLATEAU_Z
/* or when lambda-hat moves by less than this (AUTO_Z standard errors
 * included) from one level to the next, a factor AUTO_GROW in h */
#define AUTO_CHANGE SIVEI_PLATEAU_BAND
#define AUTO_GROW 2.0
/* past the plateau when a pair's change exceeds both this multiple of
 * the flattest pair's and AUTO_JUMP (point estimates: far past the plateau
 * the chains' spread is as large as the jump itself) */
#define AUTO_RISE 4.0
#define AUTO_JUMP 0.3
/* a pair that moved lambda-hat by at most this is a plateau to go back to */
#define AUTO_FLAT 0.1
/* past the plateau when, for a pair that moved lambda-hat by at most
 * AUTO_JUMP, the step-curvature share a t mean||g||^2 / (2 lambda-hat)
 * grew by more than this factor to above AUTO_STIFF_SHARE (the step_bias
 * flag's threshold): the chains reach stiffer regions than at the smaller
 * radius and the larger h buys step bias */
#define AUTO_STIFF 1.5
#define AUTO_STIFF_SHARE 0.05
#define AUTO_LEVELS SIVEI_AUTO_LADDER
/* metropolis: a level whose tail acceptance at the fixed step falls below
 * this no longer shares paths with the next (rejections decouple them):
 * the next level adapts its step again */
#define AUTO_ACCEPT_LOW SIVEI_PILOT_ACCEPT_LOW
/* metropolis, past a flat chord: one pilot AUTO_GROW^j times further
 * (AUTO_JUMP_MIN <= j <= AUTO_JUMP_MAX), at most where the full-length run
 * relaxes the directions the tether alone holds (h^2 t / a <= steps), or,
 * with anneal > 1, where its hot chains' free diffusion reaches
 * (h^2 <= 2 a kappa q / t, q the steps at t/kappa) */
#define AUTO_JUMP_MIN 2
#define AUTO_JUMP_MAX 5
/* pilots: this fraction of the steps (at least AUTO_MIN_STEPS), at most
 * AUTO_CHAINS chains */
#define AUTO_STEP_DIV 5
#define AUTO_MIN_STEPS 5000
#define AUTO_CHAINS SIVEI_PILOT_CHAINS

/* The full-length run's hot steps at t/kappa (anneal.c: the burn-in's
 * first quarter). */
static double anneal_hot_steps(const sivei_options *o)
{
    return (double)((int64_t)floor(o->burn_in * (double)o->steps) / 4);
}

/* The pilot options: absolute radius h, chains 0 .. K-1 whatever the
 * caller's range (every part of a split run then chooses the same h), no
 * anchor, no extrapolation; with anneal > 1 every pilot chain starts hot
 * (they choose h from lambda-hat(h), which cold chains that have not
 * reached the flat directions read too low). */
sivei_options sivei_pilot_options(const sivei_options *o, double h)
{
    sivei_options po = *o;
    po.h_absolute = 1;
    po.h = h;
    po.c_h = 1.0;
    po.step_extrapolate = 0;
    po.anchor = NAN;
    int64_t steps = o->steps / AUTO_STEP_DIV;
    po.steps = steps > AUTO_MIN_STEPS ? steps : AUTO_MIN_STEPS;
    if (po.steps > o->steps)
        po.steps = o->steps;
    po.chains = o->chains < AUTO_CHAINS ? o->chains : AUTO_CHAINS;
    po.chain_begin = 0;
    po.chain_end = 0;
    po.anneal_all = 1;
    return po;
}

typedef sivei_level level;

void sivei_pilot_read(const sive_result *r, double h, level *l)
{
    const double *s = r->summary;
    l->h = h;
    l->lam = s[SIVE_STAT_SIVE_UNCLIPPED];
    l->e = s[SIVE_STAT_DLAMBDA_DLOG_H] / l->lam;
    /* |lambda-hat|: a standard error is never negative (a level with
     * lambda-hat <= 0 is not ok and only its note reads se) */
    l->se = s[SIVE_STAT_DLAMBDA_DLOG_H_SE] / fabs(l->lam);
    l->share = s[SIVE_STAT_STEP_CURVATURE] / (2.0 * l->lam);
    l->accept = r->mala_accept;
    l->k = r->end - r->begin;
    for (int32_t c = r->begin; c < r->end; c++)
        l->chain[c - r->begin] = sivei_chain(r, c)->stat[SIVE_STAT_SIVE_UNCLIPPED];
    /* a chain lost to the step: the radius let it reach curvature the
     * step cannot hold */
    l->ok = r->chains_ok == r->chains && l->lam > 0.0 && isfinite(l->e);
}

/* The paired relative change of lambda-hat from level a to level b (the
 * same chains on the same random numbers) and its standard error from
 * the spread of the chains' differences. */
void sivei_pilot_change(const level *a, const level *b, double *rel, double *se)
{
    double m = 0.0, v = 0.0;
    for (int c = 0; c < a->k; c++)
        m += (b->chain[c] - a->chain[c]) / a->k;
    for (int c = 0; c < a->k; c++) {
        double d = b->chain[c] - a->chain[c] - m;
        v += d * d / (a->k > 1 ? a->k - 1 : 1);
    }
    *rel = m / a->lam;
    *se = a->k > 1 ? sqrt(v / a->k) / a->lam : INFINITY;
}

/* The no-plateau fallback's order: level (ea, sea) flatter than (eb, seb)?
 * The smaller upper bound e + AUTO_Z se on the slope, among levels whose
 * slope is not steeper than AUTO_JUMP either way.  A slope below -AUTO_JUMP
 * (lambda-hat falling by 30 % per e-fold of h) is no plateau: it is the
 * noise of chains that have not relaxed, and its upper bound is small only
 * because it is negative (L3 20-30-30-20 r5 under metropolis: e = -7.6 +-
 * 3.8 at h = 0.16 won, lambda-hat -15 %; at h = 1.28, -6 %).  Among steep
 * levels only, the smaller |e| + AUTO_Z se. */
int sivei_auto_flatter(double ea, double sea, double eb, double seb)
{
    const int sa = !(fabs(ea) <= AUTO_JUMP), sb = !(fabs(eb) <= AUTO_JUMP);
    if (sa != sb)
        return sb;
    if (sa)
        return fabs(ea) + AUTO_Z * sea < fabs(eb) + AUTO_Z * seb;
    return ea + AUTO_Z * sea < eb + AUTO_Z * seb;
}

static void choose(sivei_auto *a, const level *l, sivei_auto_end accepted)
{
    a->h = l->h;
    a->slope = l->e;
    a->slope_se = l->se;
    a->share = l->share;
    a->accepted = accepted;
}

/* radius_lookahead K (metropolis): a flat chord opens a plateau at its
 * lower level; each later level is compared with that level on the same
 * chains.  Under the exact law lambda-hat(h) rises with h and levels off
 * (docs/validation.md "An independent exact reference"), but it can level
 * off more than once: the regular directions' plateau ends where a
 * singular sub-network's scale begins (L6 5^7 r2: flat from h 0.011, then
 * +35 % from 0.25 to 20).  So a plateau is kept only once K doublings
 * stay within AUTO_CHANGE of its start; a significant rise beyond that
 * band resumes the search; and a level the pilots cannot hold (a lost
 * chain, the fixed step's acceptance collapsed: the chains reach stiffer
 * regions) or that reads significantly lower (the exact law does not
 * fall: the chains no longer relax) ends it.  The choice is the
 * plateau's largest level before that: within the band, the least cut. */
typedef enum { LOOK_ON, LOOK_HELD, LOOK_UNHEALTHY, LOOK_FELL, LOOK_ROSE } look_verdict;

static look_verdict look_ahead(const level *base, const level *cur, int octaves, int k)
{
    if (!cur->ok)
        return LOOK_UNHEALTHY;
    double rel, se;
    sivei_pilot_change(base, cur, &rel, &se);
    /* a rise first: the acceptance at the fixed step also collapses when
     * the chains reach the larger fluctuations a rise comes from (L4
     * 10-15^3-10 r6 under MALA: +7.7 % at 4x the plateau with the
     * acceptance below 0.3; keeping the plateau read -17 %); the search
     * then adapts its step again */
    if (rel > AUTO_CHANGE && rel - AUTO_Z * se > 0.0)
        return LOOK_ROSE;
    if (rel + AUTO_Z * se < -AUTO_CHANGE)
        return LOOK_FELL;
    if (!(cur->accept >= AUTO_ACCEPT_LOW))
        return LOOK_UNHEALTHY;
    return octaves >= k ? LOOK_HELD : LOOK_ON;
}

/* radius_lookahead, after a rise past a plateau: the search runs on as
 * before it, and if its levels run out before another plateau opens,
 * lambda-hat was still rising there, so the radius still cut the
 * fluctuations: the choice is the largest level reached (probe.c's
 * full-length check may then double it), not the no-plateau rule's
 * flattest level, which lies below the rise.  Only a significant fall
 * from the level before (the exact law does not fall: the pilots no
 * longer relax) stops it (1: *rise stays the last level before).  Not
 * the fixed step's acceptance, which ends a plateau (look_ahead) at a
 * cost within its band but here would discard the rise itself: past a
 * rise it collapses with the chains reaching the larger fluctuations
 * (L6 5^7 r2, layer-block moves: the pilots read 10.09, 10.37, 10.59 at
 * h 0.70, 1.4, 2.81, the exact law 10.08, 10.38, 10.51, with the
 * acceptance collapsed at 1.4).  A lost chain already ends the search. */
static int rise_track(level *rise, const level *cur, double rel, double rse)
{
    if (rel + AUTO_Z * rse < -AUTO_CHANGE)
        return 1;
    *rise = *cur;
    return 0;
}

int sivei_radius_auto(sive_probe *p, const sivei_options *o, const sive_model *m,
                      const void *theta_star, sivei_auto *a, sive_result **failed)
{
    *failed = NULL;
    memset(a, 0, sizeof *a);
    /* flat: lower end of the flattest pair; low: the smallest e + 2 se */
    level prev = {0}, cur, flat = {0}, low = {0};
    double flat_rel = INFINITY;
    /* With the exact (Metropolis) sampler there is no step bias to trade
     * against and no slide to stop (proposals too stiff for the step are
     * refused): the regular directions' plateau is flat, and the singular
     * directions' rise beyond it is of high order in h, which a local
     * slope misses and the jump rule would mistake for a slide.  Only a
     * measured chord ends the search. */
    const int exact = o->metropolis != 0;
    /* Metropolis: the levels adapt their own step while lambda-hat still
     * climbs out of the tether (a chord above AUTO_JUMP cannot end the
     * search); from the first level whose chord is below it, every later
     * level runs at that level's median adapted step, fixed, so chain c
     * draws the same normals and uniforms for its proposals at every
     * radius (common random numbers, as ULA's pilots at base_lr) and the
     * paired chord resolves */
    double step = 0.0, next = 1.0 / sqrt(o->t);
    /* a jump under way: the plateau's lower level and the chord's upper */
    level cand = {0}, ref = {0};
    int jumping = 0;
    /* radius_lookahead: a plateau under way, from base; top its largest
     * level so far, octaves the doublings since base */
    const int look_k = exact ? (int)o->radius_lookahead : 0;
    level base = {0}, top = {0};
    int looking = 0, octaves = 0;
    /* radius_lookahead: the largest level since the last rise past a
     * plateau (rise_track), for a search that ends without another */
    level rise = {0};
    int rose = 0, rise_stop = 0;
    for (int i = 0; i < AUTO_LEVELS; i++) {
        const double h = next;
        sivei_options po = sivei_pilot_options(o, h);
        po.mala_step = step;
        sive_result *r = NULL;
        int rc = sivei_run_once(p, &po, m, theta_star, &r);
        if (rc)
            return rc;
        a->levels++;
        a->pilot_steps += po.steps * po.chains;
        if (r->status == SIVE_E_CALLBACK || r->status == SIVE_E_CANCELLED) {
            *failed = r; /* the run's status: the caller returns this result */
            return SIVE_OK;
        }
        sivei_pilot_read(r, h, &cur);
        if (a->n_pilot < SIVEI_AUTO_LADDER) {
            a->pilot_h[a->n_pilot] = h;
            a->pilot_lam[a->n_pilot++] = cur.lam;
        }
        double rel = NAN, rse = NAN;
        if (i)
            sivei_pilot_change(jumping ? &ref : &prev, &cur, &rel, &rse);
        const double ran = r->mala_step; /* the step this level ran at */
        if (exact && i && step == 0.0 && rel <= AUTO_JUMP && ran > 0.0)
            step = ran;
        else if (exact && step > 0.0 && !(cur.accept >= AUTO_ACCEPT_LOW))
            step = 0.0;
        sive_result_free(r);
        if (looking) {
            a->looked++;
            const look_verdict v = look_ahead(&base, &cur, ++octaves, look_k);
            if (v == LOOK_HELD) {
                choose(a, &cur, SIVEI_END_LOOK_HELD);
                return SIVE_OK;
            }
            if (v == LOOK_UNHEALTHY || v == LOOK_FELL) {
                choose(a, &top, v == LOOK_FELL ? SIVEI_END_LOOK_FELL : SIVEI_END_LOOK_LOST);
                return SIVE_OK;
            }
            if (v == LOOK_ROSE) { /* not the last plateau: search on */
                looking = 0;
                a->jumps++;
                a->jump_from = base.h;
                rise = cur;
                rose = 1;
                rise_stop = 0;
            } else {
                top = cur;
            }
            prev = cur;
            next = cur.h * AUTO_GROW;
            continue;
        }
        /* the jump: lambda-hat still rising beyond the plateau's chord by
         * more than the plateau bound is a larger fluctuation scale the
         * doublings had not reached (the singular directions of a deep
         * network, at t^(-1/(2L))): search on from there; otherwise the
         * plateau stands.  A point estimate on purpose: under the exact
         * law a larger radius costs mixing, not bias, while a plateau kept
         * too early is an unflagged truncation, and the unrelaxed pilot at
         * the far radius is noisy (L4 6-6-6-6-6 r3: +5.5 % +- 4.5 % at
         * 8x the first plateau, whose lambda-hat is 20 % low) */
        if (jumping) {
            jumping = 0;
            if (!cur.ok || !(rel > AUTO_CHANGE)) {
                choose(a, &cand, SIVEI_END_PLATEAU);
                return SIVE_OK;
            }
            a->jumps++;
            a->jump_from = cand.h;
            prev = cur;
            next = cur.h * AUTO_GROW;
            continue;
        }
        if (!cur.ok) { /* keep the last level that held */
            choose(a, i ? &prev : &cur, SIVEI_END_NONE);
            return SIVE_OK;
        }
        if (rose && !rise_stop)
            rise_stop = rise_track(&rise, &cur, rel, rse);
        /* the step's curvature grown with the radius while lambda-hat
         * barely moved: on deep networks the chains slide along the
         * rescaling valleys to stiffer points, the step bias grows and,
         * over a longer run, lambda-hat runs away */
        if (!exact && i && rel <= AUTO_JUMP && cur.share > AUTO_STIFF * prev.share &&
            cur.share > AUTO_STIFF_SHARE) {
            choose(a, &prev, SIVEI_END_BEFORE_SHARE);
            return SIVE_OK;
        }
        /* the plateau: the slope at this radius, or the paired change from
         * the previous one, says a larger h no longer moves lambda-hat */
        if (!exact && cur.e + AUTO_Z * cur.se <= AUTO_SLOPE) {
            choose(a, &cur, SIVEI_END_PLATEAU);
            return SIVE_OK;
        }
        if (i && fabs(rel) + AUTO_Z * rse <= AUTO_CHANGE && look_k > 0) {
            /* radius_lookahead: the plateau opens; K doublings decide */
            base = prev;
            top = cur;
            octaves = 1;
            looking = 1;
            if (octaves >= look_k) {
                choose(a, &cur, SIVEI_END_LOOK_HELD);
                return SIVE_OK;
            }
            prev = cur;
            next = cur.h * AUTO_GROW;
            continue;
        }
        if (i && fabs(rel) + AUTO_Z * rse <= AUTO_CHANGE) {
            /* metropolis: before keeping it, one pilot further out */
            int j = 0;
            double reach = ran > 0.0 ? sqrt(ran * (double)o->steps / o->t) : 0.0;
            if (o->anneal > 1.0 && ran > 0.0) /* the hot chains' free diffusion */
                reach = fmax(reach, sqrt(2.0 * ran * o->anneal * anneal_hot_steps(o) / o->t));
            while (j < AUTO_JUMP_MAX && prev.h * pow(AUTO_GROW, j + 1) <= reach)
                j++;
            if (exact && j >= AUTO_JUMP_MIN && i + 1 < AUTO_LEVELS) {
                cand = prev;
                ref = cur;
                jumping = 1;
                next = prev.h * pow(AUTO_GROW, j);
                continue;
            }
            choose(a, &prev, SIVEI_END_PLATEAU);
            return SIVE_OK;
        }
        /* lambda-hat growing faster again than over the flattest pair:
         * past the plateau (on deep networks, chains sliding along the
         * rescaling valleys); the flattest pair's smaller h if that pair
         * was nearly flat, else the last radius before the jump */
        if (!exact && i >= 2 && rel > fmax(AUTO_RISE * flat_rel, AUTO_JUMP)) {
            if (flat_rel <= AUTO_FLAT)
                choose(a, &flat, SIVEI_END_FLAT_PAIR);
            else
                choose(a, &prev, SIVEI_END_BEFORE_JUMP);
            return SIVE_OK;
        }
        if (!i || sivei_auto_flatter(cur.e, cur.se, low.e, low.se))
            low = cur;
        if (i && rel < flat_rel) {
            flat_rel = rel;
            flat = prev;
        }
        prev = cur;
        next = cur.h * AUTO_GROW;
    }
    if (looking) /* the plateau held to the last level */
        choose(a, &top, SIVEI_END_LOOK_HELD);
    else if (rose) /* rose past a plateau, no other: the radius still binds */
        choose(a, &rise, rise_stop ? SIVEI_END_ROSE_FELL : SIVEI_END_ROSE_OUT);
    else
        choose(a, &low, SIVEI_END_NONE);
    return SIVE_OK;
}

/* The health text's ending for each sivei_auto_end. */
static const char *const auto_endings[] = {
    [SIVEI_END_NONE] = " (no plateau: the flattest level used)",
    [SIVEI_END_PLATEAU] = "",
    [SIVEI_END_FLAT_PAIR] = " (lambda-hat jumped past the flattest pair of radii: its smaller h)",
    [SIVEI_END_BEFORE_JUMP] = " (lambda-hat jumped before any plateau: the last h before the jump)",
    [SIVEI_END_BEFORE_SHARE] = " (the step's curvature share grew past the plateau: the last h "
                               "before it)",
    [SIVEI_END_LOOK_HELD] = " (the plateau held over the look-ahead: its largest level)",
    [SIVEI_END_LOOK_LOST] = " (a pilot past the plateau lost a chain or its acceptance "
                            "collapsed: the plateau's largest level before it)",
    [SIVEI_END_LOOK_FELL] = " (lambda-hat fell past the plateau: the plateau's largest level "
                            "before it)",
    [SIVEI_END_ROSE_OUT] = " (lambda-hat rose past a plateau and the levels ran out before "
                           "another: the largest level reached)",
    [SIVEI_END_ROSE_FELL] = " (lambda-hat rose past a plateau and the levels ran out before "
                            "another: the largest level before a pilot fell)",
};
_Static_assert(sizeof auto_endings / sizeof auto_endings[0] == SIVEI_AUTO_ENDS,
               "auto_endings: one ending per sivei_auto_end");

/* One line of health text after the flags. */
int sivei_radius_auto_note(sive_result *r, const sivei_auto *a)
{
    /* out of range (never set so): the no-plateau ending, as before */
    const unsigned end = (unsigned)a->accepted;
    const char *ending = auto_endings[end < SIVEI_AUTO_ENDS ? end : SIVEI_END_NONE];
    char line[1200] = "", twice[120] = "", jump[160] = "", look[80] = "";
    char ladder[300] = ""; /* longer: truncated */
    for (int i = 0, at = 0; i < a->n_pilot && at < (int)sizeof ladder; i++)
        at += snprintf(ladder + at, sizeof ladder - (size_t)at, "%s%.3g %.4g", i ? ", " : "",
                       a->pilot_h[i], a->pilot_lam[i]);
    if (a->looked)
        snprintf(look, sizeof look, " (%d pilots past a plateau)", a->looked);
    if (a->jumps)
        snprintf(jump, sizeof jump,
                 " (a pilot past the plateau at h = %.4g found lambda-hat still rising: "
                 "searched on from there)",
                 a->jump_from);
    if (a->doublings)
        snprintf(twice, sizeof twice,
                 " (then doubled %d times: d ln lambda-hat / d ln h of the full-length run above 0.04)",
                 a->doublings);
    snprintf(line, sizeof line,
             "radius: chosen from the loss (c_h = 0): h = %.4g after %d pilot runs "
             "(%lld chain steps); d ln lambda-hat / d ln h there %.3g +- %.2g%s%s%s%s; "
             "pilots (h lambda-hat): %s\n",
             a->h, a->levels, (long long)a->pilot_steps, a->slope, a->slope_se, jump, look,
             twice, ending, ladder);
    return sivei_health_append(r, line);
}
