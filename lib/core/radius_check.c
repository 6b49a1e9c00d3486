/* The radius check (experimental radius_check; docs/theory.md "Radius
 * from the loss", *Checking a radius that was set*): after a run at a
 * fixed radius, the radius search's paired pilots at that h and at
 * CHECK_LEVELS - 1 doublings of it.  A rise of lambda-hat beyond the
 * plateau band is a cut the run's own slope cannot see when the law
 * rises slowly at h and faster further out (the local slope is below
 * radius_bound's floor while 4h reads more than 4 % higher). */
#include "probe_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* h, 2h, 4h: two doublings, the look-ahead's rule over the part of it a
 * run can relax (docs/theory.md) */
#define CHECK_LEVELS 3
#define CHECK_GROW 2.0
/* the note's prefix when the check raises the flag; a loaded or merged
 * result raises it again from this line */
#define CHECK_FIRED "radius_check: radius_bound: "

typedef enum { CHECK_FLAT, CHECK_ROSE, CHECK_FELL, CHECK_LOST, CHECK_STOPPED } check_verdict;

typedef struct check_out {
    check_verdict v;
    int levels;
    int64_t steps; /* chain steps of the pilots */
    double h[CHECK_LEVELS], rel[CHECK_LEVELS], se[CHECK_LEVELS];
    sive_result *failed; /* a pilot's callback error or cancel */
} check_out;

/* The pilots, from the run's radius up, each paired with the first on
 * the same chains and random numbers.  Metropolis: the first level adapts
 * its step, the others run at its median step, fixed, so that chain c
 * draws the same proposals at every radius (the search's look-ahead),
 * until the acceptance at that step falls below the search's floor (then
 * the next level adapts its own). */
static int check_pilots(sive_probe *p, const sivei_options *o, const sive_model *m,
                        const void *theta_star, double h0, check_out *c)
{
    sivei_level base = {0}, cur;
    double step = 0.0;
    c->v = CHECK_FLAT;
    for (int i = 0; i < CHECK_LEVELS; i++) {
        const double h = c->h[i] = h0 * pow(CHECK_GROW, i);
        sivei_options po = sivei_pilot_options(o, h);
        po.radius_check = 0;
        po.mala_step = step;
        sive_result *r = NULL;
        const int rc = sivei_run_once(p, &po, m, theta_star, &r);
        if (rc)
            return rc;
        c->steps += po.steps * po.chains;
        if (r->status == SIVE_E_CALLBACK || r->status == SIVE_E_CANCELLED) {
            c->failed = r;
            c->v = CHECK_STOPPED;
            return SIVE_OK;
        }
        sivei_pilot_read(r, h, i ? &cur : &base);
        if (!i && o->metropolis && r->mala_step > 0.0)
            step = r->mala_step;
        sive_result_free(r);
        c->levels = i + 1;
        if (!(i ? cur.ok : base.ok)) { /* a lost chain: the check cannot say */
            c->v = CHECK_LOST;
            return SIVE_OK;
        }
        if (!i)
            continue;
        sivei_pilot_change(&base, &cur, &c->rel[i], &c->se[i]);
        if (c->rel[i] > SIVEI_PLATEAU_BAND && c->rel[i] - SIVEI_PLATEAU_Z * c->se[i] > 0.0) {
            c->v = CHECK_ROSE;
            return SIVE_OK;
        }
        /* the exact law does not fall: the larger radius no longer relaxes */
        if (c->rel[i] + SIVEI_PLATEAU_Z * c->se[i] < -SIVEI_PLATEAU_BAND) {
            c->v = CHECK_FELL;
            return SIVE_OK;
        }
        if (o->metropolis && !(cur.accept >= SIVEI_PILOT_ACCEPT_LOW))
            step = 0.0;
    }
    return SIVE_OK;
}

/* The check's health line. */
static int check_note(sive_result *r, const check_out *c, int chains, int64_t steps)
{
    char line[900], seen[400] = "";
    for (int i = 1, at = 0; i < c->levels && at < (int)sizeof seen; i++)
        at += snprintf(seen + at, sizeof seen - (size_t)at, "%s%+.1f %% +- %.1f %% at h = %.4g",
                       i > 1 ? ", " : "", 100.0 * c->rel[i], 100.0 * c->se[i], c->h[i]);
    const double cost = (double)c->steps / ((double)steps * chains);
    const int n = c->levels - 1;
    if (c->v == CHECK_ROSE)
        snprintf(line, sizeof line,
                 CHECK_FIRED "paired pilots read lambda-hat %s against h = %.4g (%lld chain "
                 "steps, %.2f times the run's): it still rises beyond %.0f %% with the radius, "
                 "so h = %.4g cuts the fluctuations; raise h, or c_h auto\n",
                 seen, c->h[0], (long long)c->steps, cost, 100.0 * SIVEI_PLATEAU_BAND, c->h[0]);
    else
        snprintf(line, sizeof line,
                 "radius_check: paired pilots read lambda-hat %s against h = %.4g (%lld chain "
                 "steps, %.2f times the run's)%s\n",
                 n > 0 ? seen : "no paired change", c->h[0], (long long)c->steps, cost,
                 c->v == CHECK_FELL ? ": it fell at the larger radius (the pilot did not "
                                      "relax there): no verdict"
                 : c->v == CHECK_LOST ? ": a pilot lost a chain: no verdict"
                 : c->v == CHECK_STOPPED ? ": stopped"
                                         : ": no rise beyond the plateau band (4 %) resolved");
    return sivei_health_append(r, line);
}

int sivei_radius_check(sive_probe *p, const sive_model *m, const void *theta_star,
                       sive_result *r)
{
    check_out c;
    memset(&c, 0, sizeof c);
    /* the pilots read the radius: no views; the run found the loss exact
     * at theta* (metropolis): its pilots need not call it again */
    const size_t views = p->n_views;
    const int star = p->star_exact;
    p->n_views = 0;
    p->star_exact = star || r->opt.metropolis;
    const int rc = check_pilots(p, &r->opt, m, theta_star, r->h, &c);
    p->n_views = views;
    p->star_exact = star;
    if (rc)
        return rc;
    if (c.failed) {
        char msg[SIVE_ERRMSG_LEN + 64];
        snprintf(msg, sizeof msg, "in the radius check's pilot at h = %.4g: %s",
                 c.h[c.levels], c.failed->errmsg);
        sivei_result_conclude(r, c.failed->status, c.failed->callback_code, msg);
        sive_result_free(c.failed);
    }
    if (c.v == CHECK_ROSE)
        r->flags |= SIVE_FLAG_RADIUS_BOUND;
    /* the whole run's chains: every part of a split run has the same line */
    const int err = check_note(r, &c, (int)r->opt.chains, r->opt.steps);
    return err ? sivei_fail(p->errmsg, err, "out of memory for the health text") : SIVE_OK;
}

void sivei_radius_check_reflag(sive_result *r)
{
    for (const char *s = r->notes; s && (s = strstr(s, CHECK_FIRED)); s++)
        if (s == r->notes || s[-1] == '\n') {
            r->flags |= SIVE_FLAG_RADIUS_BOUND;
            return;
        }
}
