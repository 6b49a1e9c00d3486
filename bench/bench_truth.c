/* The ground-truth suite (docs/validation.md): every case of tools/truth.c
 * probed with the given options, against the exact learning coefficient.
 *
 *   bench_truth [--quick] [--only TEXT] [--skip TEXT] [--t T] [--h-zero H] [--seed S]
 *               [--probe-seed S] [--threads K] [--population | --data N]
 *               [--bad [--bad-steps M] [--save DIR] | --reflag DIR]
 *               [--dln-move orbit|gibbs] [--OPTION VALUE]...
 *
 * --OPTION VALUE is any libsive option by name (--steps 20000, --c_h 0.5,
 * --h 0.1, --base_lr 0.01, --chains 8, ...).  --t replaces every case's t
 * (by default each case's t comes from the theory, truth_theory_t()).
 * --only / --skip keep / drop the cases whose name contains TEXT (--skip
 * may be repeated).  --dln-move gibbs makes the DLN models supply the exact
 * Gibbs layer move (sive_dln_set_move; population mode only, a data-mode
 * case then fails) instead of the GL orbit move; either runs only with
 * --orbit_every K --metropolis 1.  --kron_every K --metropolis 1 (an option
 * by name, experimental) adds the library's layer-block Newton move from the
 * DLN models' exact Kronecker curvature instead, in either mode.
 * --quick runs the quick subset with 20 000 steps (unless --steps is
 * given).  --seed is the teacher's (frames, data); --probe-seed S sets
 * the probe's option seed.  --population / --data N put every DLN in population mode or on
 * N noiseless examples.  A bad argument (unknown option, missing value, a
 * value the option refuses: libsive's options are checked by
 * sive_probe_set_text() before any run) exits 2, its message naming it.  With SIVE_TRUTH_HEALTH set in the environment
 * each run's health text goes to stderr.
 *
 * --bad runs each case at the given settings and at deliberately bad ones
 * (issue 18, part 5): the radius 5x smaller and 5x larger (the absolute h
 * = 0.2 or 5 times the radius the given settings used, so c_h, the
 * theta* = 0 fallback and c_h = auto alike) and base_lr 4x larger, with
 * the same seeds.  Where the given run resolved to the Metropolis-adjusted
 * step (the defaults on an exact loss), the two radii keep it (metropolis
 * 1: h alone would give ULA), and since MALA adapts its step over the
 * burn-in from base_lr, the step too large is ULA at 4 base_lr at the
 * given run's radius (metropolis 0, h = that radius); with the given
 * settings on ULA (--metropolis 0, the 0.2 defaults) the bad ones only
 * add h or base_lr, as before.  --bad-steps M runs the three bad settings
 * at M steps (the given one keeps its own); it prints each run with the diagnostics behind the
 * flags, and the counts of the acceptance: runs more than 10 % off that
 * carry a flag other than nonstationary / low_ess, and runs within 5 %
 * that carry none.  With --save DIR each run's result is saved there
 * (sive_result_save; the note holds the case, setting, lambda and target);
 * --reflag DIR prints the same table from the saved results, whose
 * statistics and flags sive_result_load() recomputes with this build's
 * library: a change of the flags measured without running the chains
 * again (the chains, hence lambda-hat, are the saved ones).  Without
 * --bad, --save DIR saves each run as DIR/<case>__given.sive
 * (bench_start reads them). */
#include "bench_common.h"
#include "truth.h"

#include <errno.h>
#include <math.h>

static void usage(void)
{
    fprintf(stderr, "usage: bench_truth [--quick] [--only TEXT] [--skip TEXT] [--t T] [--h-zero H] "
                    "[--seed S] [--probe-seed S] [--threads K] [--population | --data N] "
                    "[--bad [--bad-steps M] [--save DIR] | --reflag DIR] [--dln-move orbit|gibbs] "
                    "[--OPTION VALUE]...\n");
    exit(2);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void flag_names(uint32_t flags, int fallback, char *buf, size_t len)
{
    buf[0] = 0;
    for (uint32_t bit = 1; bit; bit <<= 1)
        if ((flags & bit) && sive_flag_name(bit))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "",
                     sive_flag_name(bit));
    if (fallback)
        snprintf(buf + strlen(buf), len - strlen(buf), "%sh_zero", buf[0] ? "," : "");
    if (!buf[0])
        snprintf(buf, len, "-");
}

/* Per-depth summary, the coverage and the error distribution. */
static void summary(const truth_case *cs, const truth_row *rows, const int *ran,
                    size_t n)
{
    double absrel[64];
    size_t m = 0, within5 = 0, covered = 0, with_se = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ran[i])
            continue;
        absrel[m++] = fabs(rows[i].rel);
        within5 += fabs(rows[i].rel) <= 0.05;
        if (isfinite(rows[i].z)) {
            with_se++;
            covered += fabs(rows[i].z) <= 1.96;
        }
    }
    if (!m)
        return;
    qsort(absrel, m, sizeof absrel[0], cmp_double);
    printf("\n%zu cases run: |rel| <= 5%% in %zu (%.0f%%), median |rel| %.1f%%; "
           "95%% intervals (lambda-hat +- 1.96 MCSE) cover the target in %zu of %zu\n",
           m, within5, 100.0 * within5 / m, 100.0 * absrel[m / 2], covered, with_se);
    printf("by depth (0: monomials): median rel, within 5%%:");
    for (size_t L = 0; L <= TRUTH_MAX_LAYERS; L++) {
        double v[64];
        size_t k = 0, in5 = 0;
        for (size_t i = 0; i < n; i++)
            if (ran[i] && (cs[i].kind == TRUTH_DLN ? cs[i].layers : 0) == L) {
                v[k++] = rows[i].rel;
                in5 += fabs(rows[i].rel) <= 0.05;
            }
        if (!k)
            continue;
        qsort(v, k, sizeof v[0], cmp_double);
        printf("  L%zu %+.1f%% %zu/%zu", L, 100 * (k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2])),
               in5, k);
    }
    printf("\n");
}

/* The case is run: in the quick subset if asked, its name containing
 * only and none of the skip texts. */
static int selected(const truth_case *c, int quick, const char *only,
                    const char *const *skip, int nskip)
{
    if ((quick && !c->quick) || (only && !strstr(c->name, only)))
        return 0;
    for (int i = 0; i < nskip; i++)
        if (strstr(c->name, skip[i]))
            return 0;
    return 1;
}

/* ---- --bad: the flags on deliberately bad settings -------------------- */

enum { BAD_SETTINGS = 4 };
static const char *const bad_label[BAD_SETTINGS] = {"given", "h/5", "h*5", "lr*4"};

/* The diagnostics behind the flags of one run (inspect callback). */
typedef struct bad_diag {
    double zmax, slope, slope_se, share, disp, disp_growth, spike, climb, var_mean;
    int64_t metropolis; /* the run's resolved sampler (1 MALA, 0 ULA)   */
    const char *save_dir, *name, *label; /* --save: where, and the note  */
    int save_failed;
} bad_diag;

/* Mean of x[a, b). */
static double span_mean(const double *x, size_t a, size_t b)
{
    double s = 0.0;
    for (size_t i = a; i < b; i++)
        s += x[i];
    return b > a ? s / (double)(b - a) : NAN;
}

/* The last quarter's mean over the first quarter's of a trace's tail
 * (the last 70 %, the default burn-in), largest over the chains. */
static double trace_growth(const sive_result *r, sive_trace which)
{
    double worst = NAN;
    for (int32_t c = 0; c < sive_result_chains(r); c++) {
        size_t len = 0;
        const double *x = sive_result_trace(r, which, c, &len);
        if (!x || len < 16)
            continue;
        const size_t a = (size_t)(0.3 * (double)len), q = (len - a) / 4;
        const double g = span_mean(x, len - q, len) / span_mean(x, a, a + q);
        if (isfinite(g) && !(g <= worst))
            worst = g;
    }
    return worst;
}

/* The file of a run in DIR: the case name and setting, blanks and '/' as
 * '_'. */
static void bad_path(char *buf, size_t len, const char *dir, const char *name,
                     const char *label)
{
    int k = snprintf(buf, len, "%s/", dir);
    for (const char *c = name; *c && k + 2 < (int)len; c++)
        buf[k++] = *c == ' ' || *c == '/' ? '_' : *c;
    snprintf(buf + k, len - (size_t)k, "__%s.sive", label[0] == 'h' && label[1] == '/' ? "h_div5"
             : label[0] == 'h' ? "h_mul5" : label[0] == 'l' ? "lr_mul4" : "given");
}

static int cmp_desc(const void *a, const void *b)
{
    return cmp_double(b, a);
}

/* The largest share, over the chains, of the tail's (Lbar - mean)^2 that
 * its top 0.1 % carry (the last 70 % of the trace, the default burn-in;
 * the library's unstable flag computes it on the run's own tail). */
static double spike_share(const sive_result *r)
{
    double worst = NAN;
    for (int32_t c = 0; c < sive_result_chains(r); c++) {
        size_t len = 0;
        const double *x = sive_result_trace(r, SIVE_TRACE_LBAR, c, &len);
        const size_t a = (size_t)(0.3 * (double)len), n = len - a;
        double *y = x && n >= 16 ? malloc(n * sizeof *y) : NULL;
        if (!y)
            continue;
        const double mean = span_mean(x, a, len);
        double total = 0.0, top = 0.0;
        for (size_t i = 0; i < n; i++)
            total += y[i] = (x[a + i] - mean) * (x[a + i] - mean);
        qsort(y, n, sizeof *y, cmp_desc);
        for (size_t i = 0; i < (n / 1000 ? n / 1000 : 1); i++)
            top += y[i];
        free(y);
        if (total > 0.0 && !(top / total <= worst))
            worst = top / total;
    }
    return worst;
}

/* The loss at theta*: the chains' first evaluations, averaged (NAN when
 * no chain has one). */
static double loss_at_star(const sive_result *r)
{
    double l0 = 0.0;
    int k = 0;
    for (int32_t c = 0; c < sive_result_chains(r); c++) {
        size_t len = 0;
        const double *x = sive_result_trace(r, SIVE_TRACE_LBAR, c, &len);
        if (x && len && isfinite(x[0]))
            l0 += x[0], k++;
    }
    return k ? l0 / k : NAN;
}

/* The largest t (mean tail loss - loss at theta*) over the chains, in
 * units of d/2 (the loss at theta*: the chains' first evaluation,
 * averaged; the library's unstable flag tests it with its noise). */
static double climb(const sive_result *r)
{
    double t = NAN, worst = NAN;
    const double l0 = loss_at_star(r);
    sive_result_option_double(r, SIVE_OPT_T, &t);
    for (int32_t c = 0; !isnan(l0) && c < sive_result_chains(r); c++) {
        const double e = t * (sive_result_stat(r, SIVE_STAT_TAIL_MEAN_LOSS, c) - l0) /
                         (0.5 * (double)sive_result_params_dim(r));
        if (isfinite(e) && !(e <= worst))
            worst = e;
    }
    return worst;
}

/* The largest lambda-hat / (t (mean tail loss - loss at theta*) + slope
 * proxy) over the chains (the library's unstable flag tests it with its
 * noise); infinite where the denominator is not positive. */
static double var_mean(const sive_result *r)
{
    double t = NAN, worst = NAN;
    const double l0 = loss_at_star(r);
    sive_result_option_double(r, SIVE_OPT_T, &t);
    for (int32_t c = 0; !isnan(l0) && c < sive_result_chains(r); c++) {
        const double m = t * (sive_result_stat(r, SIVE_STAT_TAIL_MEAN_LOSS, c) - l0) +
                         fmax(sive_result_stat(r, SIVE_STAT_SLOPE_PROXY, c), 0.0),
                     v = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c),
                     q = m > 0.0 ? v / m : INFINITY;
        if (!isnan(v) && !(q <= worst))
            worst = q;
    }
    return worst;
}

static void bad_inspect(const sive_result *r, const truth_row *row, void *ctx)
{
    bad_diag *d = ctx;
    const double lam = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    if (d->save_dir) {
        char path[1024], note[512];
        bad_path(path, sizeof path, d->save_dir, d->name, d->label);
        snprintf(note, sizeof note, "%s\n%s\n%.17g %.17g %d %.17g\n", d->name, d->label,
                 row->lambda, row->target, row->h_fallback, row->seconds);
        if (sive_result_save(r, path, note)) {
            fprintf(stderr, "cannot save %s: %s\n", path, sive_last_errmsg());
            d->save_failed = 1;
        }
    }
    d->zmax = 0.0;
    d->disp = 0.0;
    d->metropolis = 0;
    sive_result_option_int(r, SIVE_OPT_METROPOLIS, &d->metropolis);
    for (int32_t c = 0; c < sive_result_chains(r); c++) {
        d->zmax = fmax(d->zmax, fabs(sive_result_stat(r, SIVE_STAT_HALVES_Z, c)));
        d->disp = fmax(d->disp, sive_result_stat(r, SIVE_STAT_RMS_DISP_REL_H, c));
    }
    d->slope = sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H, SIVE_SUMMARY) / lam;
    d->slope_se = sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H_SE, SIVE_SUMMARY) / lam;
    d->share = sive_result_stat(r, SIVE_STAT_STEP_CURVATURE, SIVE_SUMMARY) / (2.0 * lam);
    d->disp_growth = trace_growth(r, SIVE_TRACE_DISP);
    d->spike = spike_share(r);
    d->climb = climb(r);
    d->var_mean = var_mean(r);
}

/* A flag other than nonstationary / low_ess (the "caught"). */
static int bad_caught(uint32_t flags)
{
    return (flags & ~(uint32_t)(SIVE_FLAG_NONSTATIONARY | SIVE_FLAG_LOW_ESS)) != 0;
}

/* The given settings' base_lr (the library default unless set). */
static double given_base_lr(const truth_settings *s)
{
    sive_probe *p = NULL;
    double a = NAN;
    if (sive_probe_new(&p))
        return a;
    for (int i = 0; i < s->nsets; i++) {
        char name[64];
        const char *eq = strchr(s->sets[i], '=');
        if (eq && (size_t)(eq - s->sets[i]) < sizeof name) {
            memcpy(name, s->sets[i], (size_t)(eq - s->sets[i]));
            name[eq - s->sets[i]] = 0;
            sive_probe_set_text(p, name, eq + 1);
        }
    }
    sive_probe_get_double(p, SIVE_OPT_BASE_LR, &a);
    sive_probe_free(p);
    return a;
}

typedef struct bad_count {
    int runs, off10, caught, within5, clean;
} bad_count;

static void bad_tally(bad_count *b, const truth_row *r)
{
    b->runs++;
    if (fabs(r->rel) > 0.10) {
        b->off10++;
        b->caught += bad_caught(r->flags);
    } else if (fabs(r->rel) <= 0.05) {
        b->within5++;
        b->clean += r->flags == 0;
    }
}

static void bad_print_count(const char *label, const bad_count *b)
{
    printf("%-6s %4d runs: > 10 %% off %3d, flagged (not only nonstationary/low_ess) %3d; "
           "within 5 %% %3d, no flag %3d (%.0f %%)\n", label, b->runs, b->off10, b->caught,
           b->within5, b->clean, b->within5 ? 100.0 * b->clean / b->within5 : NAN);
}

/* One run's line, its tally and whether it is a miss. */
static void bad_report(bad_count *cnt, const truth_case *c, int k, const truth_row *r,
                       const bad_diag *diag)
{
    char fl[256];
    bad_tally(&cnt[k], r);
    bad_tally(&cnt[BAD_SETTINGS], r);
    flag_names(r->flags, r->h_fallback, fl, sizeof fl);
    const int miss = (fabs(r->rel) > 0.10 && !bad_caught(r->flags)) ||
                     (fabs(r->rel) <= 0.05 && r->flags);
    printf("%-28s %-5s %9.3f %8.3g %10.4g %8.3g %+6.1f%% %+7.2f %6.2f %+6.3f+-%-5.3f "
           "%6.3f %6.3f %6.3f %6.3f %9.3g %7.3g %6.1f  %s%s\n", c->name, bad_label[k], r->lambda,
           r->h, r->est, r->mcse, 100 * r->rel, r->z, diag->zmax, diag->slope, diag->slope_se,
           diag->share, diag->disp, diag->disp_growth, diag->spike, diag->climb, diag->var_mean,
           r->seconds, fl,
           miss ? "  <- miss" : "");
    fflush(stdout);
}

/* A saved run as a row (--reflag); 0 on success. */
static int bad_load(const char *path, truth_row *row, bad_diag *diag)
{
    sive_result *r = NULL;
    char *note = NULL;
    memset(row, 0, sizeof *row);
    if (sive_result_load(path, &r, &note)) {
        printf("cannot load %s: %s\n", path, sive_last_errmsg());
        return 1;
    }
    const char *nums = note;
    for (int i = 0; i < 2 && nums; i++)
        nums = strchr(nums, '\n') ? strchr(nums, '\n') + 1 : NULL;
    if (!nums || sscanf(nums, "%lf %lf %d %lf", &row->lambda, &row->target, &row->h_fallback,
                        &row->seconds) != 4) {
        printf("%s: no note\n", path);
        sive_free(note);
        sive_result_free(r);
        return 1;
    }
    row->h = sive_result_stat(r, SIVE_STAT_H, SIVE_SUMMARY);
    row->est = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    row->mcse = sive_result_mcse(r);
    row->flags = sive_result_flags(r);
    row->rel = row->est / row->lambda - 1.0;
    row->z = (row->est - (isnan(row->target) ? row->lambda : row->target)) / row->mcse;
    bad_inspect(r, row, diag);
    if (getenv("SIVE_TRUTH_HEALTH"))
        fprintf(stderr, "%s:\n%s", path, sive_result_health(r));
    sive_free(note);
    sive_result_free(r);
    return 0;
}

static int bad_mode(const truth_case *cs, size_t n, truth_settings *s, int quick,
                    const char *only, const char *const *skip, int nskip,
                    const char *save_dir, const char *reflag_dir, const char *bad_steps)
{
    const double lr = given_base_lr(s);
    bad_count cnt[BAD_SETTINGS + 1];
    memset(cnt, 0, sizeof cnt);
    int failures = 0, nsets0 = s->nsets;
    char extra[2][64];
    bad_diag diag = {.save_dir = save_dir};
    s->inspect = bad_inspect;
    s->inspect_ctx = &diag;
    if (reflag_dir)
        printf("--bad --reflag %s: the saved runs, statistics and flags recomputed by this "
               "build\n", reflag_dir);
    else
        printf("--bad: each case at the given settings, h/5, h*5 (absolute h from the given "
               "run's radius; with metropolis 1 where the given run resolved to it) and "
               "base_lr*4 = %g (ULA at the given radius where the given run was MALA); same "
               "seeds\n", 4 * lr);
    printf("zmax: largest |halves z|; slope: d ln lambda-hat/d ln h +- se; share: "
           "a t mean||g||^2/(2 lambda-hat); disp: largest tail displacement/h; "
           "dgrow: the displacement's last/first quarter of the tail; spike: share of the "
           "tail's variance of Lbar in its top 0.1 %%; climb: t (mean tail loss - loss at theta*) / "
           "(d/2); var/mean: lambda-hat / (t (mean tail loss - loss at theta*) + slope proxy) "
           "(all largest over chains)\n\n");
    printf("%-28s %-5s %9s %8s %10s %8s %7s %7s %6s %13s %6s %6s %6s %6s %9s %7s %6s  %s\n",
           "case", "set", "lambda", "h", "lambda-hat", "mcse", "rel", "z", "zmax", "slope",
           "share", "disp", "dgrow", "spike", "climb", "var/mean", "sec", "flags");
    for (size_t i = 0; i < n; i++) {
        if (!selected(&cs[i], quick, only, skip, nskip))
            continue;
        double h_given = NAN;
        int mala_given = 0;
        for (int k = 0; k < BAD_SETTINGS; k++) {
            truth_row r;
            diag.name = cs[i].name;
            diag.label = bad_label[k];
            if (reflag_dir) {
                char path[1024];
                bad_path(path, sizeof path, reflag_dir, cs[i].name, bad_label[k]);
                if (bad_load(path, &r, &diag))
                    failures++;
                else
                    bad_report(cnt, &cs[i], k, &r, &diag);
                continue;
            }
            s->nsets = nsets0;
            if (k && !isfinite(h_given))
                break; /* the given run failed */
            if (nsets0 + 4 > TRUTH_MAX_SETS) {
                fprintf(stderr, "too many options\n");
                return 1;
            }
            if (k && bad_steps)
                s->sets[s->nsets++] = bad_steps;
            if (k == 1 || k == 2) {
                snprintf(extra[0], sizeof extra[0], "h=%.17g", h_given * (k == 1 ? 0.2 : 5.0));
                s->sets[s->nsets++] = extra[0];
                if (mala_given) /* setting h alone would give ULA */
                    s->sets[s->nsets++] = "metropolis=1";
            } else if (k == 3) {
                snprintf(extra[0], sizeof extra[0], "base_lr=%.17g", 4 * lr);
                s->sets[s->nsets++] = extra[0];
                if (mala_given) { /* MALA adapts its step: ULA at the given radius */
                    snprintf(extra[1], sizeof extra[1], "h=%.17g", h_given);
                    s->sets[s->nsets++] = extra[1];
                    s->sets[s->nsets++] = "metropolis=0";
                }
            }
            char err[600] = "";
            if (truth_run(&cs[i], s, &r, err, sizeof err)) {
                printf("%-28s %-5s failed: %s\n", cs[i].name, bad_label[k], err);
                failures++;
                continue;
            }
            if (k == 0) {
                h_given = r.h;
                mala_given = diag.metropolis == 1;
            }
            bad_report(cnt, &cs[i], k, &r, &diag);
        }
    }
    s->nsets = nsets0;
    printf("\n");
    for (int k = 0; k <= BAD_SETTINGS; k++)
        bad_print_count(k < BAD_SETTINGS ? bad_label[k] : "all", &cnt[k]);
    return failures || diag.save_failed ? 1 : 0;
}

/* A bad command line: the argument and why on stderr, then the usage
 * (exit 2). */
static void bad_arg(const char *arg, const char *value, const char *why)
{
    fprintf(stderr, "bench_truth: %s%s%s: %s\n", arg, value ? " " : "", value ? value : "",
            why);
    usage();
}

static double arg_double(const char *a, const char *v, double lo, double hi)
{
    char *end = NULL;
    errno = 0;
    const double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x <= lo || x > hi) {
        char why[96];
        snprintf(why, sizeof why, "expects a number in (%g, %g]", lo, hi);
        bad_arg(a, v, why);
    }
    return x;
}

static int64_t arg_int(const char *a, const char *v, int64_t lo, int64_t hi)
{
    char *end = NULL;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        char why[96];
        snprintf(why, sizeof why, "expects an integer in [%lld, %lld]", (long long)lo,
                 (long long)hi);
        bad_arg(a, v, why);
    }
    return x;
}

/* A seed: decimal digits, 0 .. 2^64 - 1 (strtoull would take a sign). */
static uint64_t arg_seed(const char *a, const char *v)
{
    char *end = NULL;
    errno = 0;
    const unsigned long long x = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || errno || *end)
        bad_arg(a, v, "expects an integer in [0, 18446744073709551615]");
    return x;
}

/* VALUE of libsive's option NAME as the probe would take it (a fresh probe:
 * the value alone is checked; combinations are the run's). */
static void check_option(const char *a, const char *name, const char *v)
{
    sive_probe *p = NULL;
    if (sive_probe_new(&p))
        bad_arg(a, v, "out of memory");
    if (sive_probe_set_text(p, name, v) != SIVE_OK) {
        char why[600];
        snprintf(why, sizeof why, "%s", sive_probe_errmsg(p));
        sive_probe_free(p);
        bad_arg(a, v, why);
    }
    sive_probe_free(p);
}

/* "NAME=VALUE" for the probe (freed at exit). */
static const char *kv(const char *name, const char *v)
{
    char *out = malloc(strlen(name) + strlen(v) + 2);
    if (!out)
        bad_arg(name, v, "out of memory");
    sprintf(out, "%s=%s", name, v);
    return out;
}

/* The options that take a value (besides libsive's options by name). */
static int bench_option(const char *a)
{
    static const char *const names[] = {"--only", "--skip", "--save", "--bad-steps",
                                        "--reflag", "--t", "--h-zero", "--seed",
                                        "--probe-seed", "--threads", "--data", "--dln-move"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(a, names[i]))
            return 1;
    return 0;
}

typedef struct args {
    int quick, steps_set, bad, nskip;
    const char *save_dir, *reflag_dir, *bad_steps, *only, *skip[16];
} args;

/* One option with its value v (checked: a bad one exits 2 naming it). */
static void parse_value(args *g, truth_settings *s, const char *a, const char *v)
{
    sive_option opt;
    if (!strcmp(a, "--only"))
        g->only = v;
    else if (!strcmp(a, "--skip")) {
        if (g->nskip == 16)
            bad_arg(a, v, "at most 16 --skip");
        g->skip[g->nskip++] = v;
    } else if (!strcmp(a, "--save"))
        g->save_dir = v;
    else if (!strcmp(a, "--bad-steps")) {
        check_option(a, "steps", v);
        g->bad_steps = kv("steps", v), g->bad = 1;
    } else if (!strcmp(a, "--reflag"))
        g->reflag_dir = v, g->bad = 1;
    else if (!strcmp(a, "--t"))
        s->t = arg_double(a, v, 0.0, 1e12);
    else if (!strcmp(a, "--h-zero"))
        s->h_zero = arg_double(a, v, 0.0, 1e300);
    else if (!strcmp(a, "--seed"))
        s->seed = arg_seed(a, v);
    else if (!strcmp(a, "--threads"))
        s->threads = (int)arg_int(a, v, 1, 1024);
    else if (!strcmp(a, "--data"))
        s->data_n = arg_int(a, v, 0, INT64_C(1) << 32);
    else if (!strcmp(a, "--dln-move")) {
        if (strcmp(v, "gibbs") && strcmp(v, "orbit"))
            bad_arg(a, v, "expects orbit or gibbs");
        s->dln_gibbs = !strcmp(v, "gibbs");
    } else { /* --probe-seed S or a libsive option by name */
        const char *name = !strcmp(a, "--probe-seed") ? "seed" : a + 2;
        if (s->nsets == TRUTH_MAX_SETS)
            bad_arg(a, v, "too many options");
        check_option(a, name, v);
        s->sets[s->nsets++] = kv(name, v);
        g->steps_set |= sive_option_by_name(name, &opt) == SIVE_OK && opt == SIVE_OPT_STEPS;
    }
}

static void parse_args(int argc, char **argv, args *g, truth_settings *s)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        sive_option opt;
        if (!strcmp(a, "--quick"))
            g->quick = 1;
        else if (!strcmp(a, "--bad"))
            g->bad = 1;
        else if (!strcmp(a, "--population"))
            s->data_n = 0;
        else if (strncmp(a, "--", 2))
            bad_arg(a, NULL, "not an option (they start with --)");
        else if (!bench_option(a) && sive_option_by_name(a + 2, &opt) != SIVE_OK)
            bad_arg(a, NULL, "unknown option (neither bench_truth's nor a libsive option)");
        else if (i + 1 == argc)
            bad_arg(a, NULL, "needs a value");
        else
            parse_value(g, s, a, argv[++i]);
    }
}

int main(int argc, char **argv)
{
    truth_settings s;
    truth_settings_default(&s);
    args g = {0};
    parse_args(argc, argv, &g, &s);
    int quick = g.quick, steps_set = g.steps_set, bad = g.bad, nskip = g.nskip;
    const char *save_dir = g.save_dir, *reflag_dir = g.reflag_dir, *bad_steps = g.bad_steps;
    const char *only = g.only, *const *skip = g.skip;
    if (quick && !steps_set && s.nsets < TRUTH_MAX_SETS)
        s.sets[s.nsets++] = "steps=20000";
    bench_machine();
    printf("libsive %s; options:", sive_version_string());
    for (int i = 0; i < s.nsets; i++)
        printf(" %s", s.sets[i]);
    printf("%s; t %s\n\n", s.nsets ? "" : " (defaults)",
           isnan(s.t) ? "per case (theory)" : "fixed");
    if (bad) {
        size_t nb;
        const truth_case *cb = truth_cases(&nb);
        return bad_mode(cb, nb, &s, quick, only, skip, nskip, save_dir, reflag_dir, bad_steps);
    }
    printf("%-28s %7s %3s %9s %3s %8s %8s %9s %10s %8s %7s %7s %7s  %s\n", "case", "d",
           "L", "lambda", "m", "t", "h", "target_t", "lambda-hat", "mcse", "rel",
           "z", "sec", "flags");
    size_t n;
    const truth_case *cs = truth_cases(&n);
    bad_diag diag = {.save_dir = save_dir, .label = "given"};
    if (save_dir) { /* each run into DIR/<case>__given.sive */
        s.inspect = bad_inspect;
        s.inspect_ctx = &diag;
    }
    truth_row rows[64];
    int ran[64] = {0}, failures = 0;
    for (size_t i = 0; i < n && i < 64; i++) {
        if (!selected(&cs[i], quick, only, skip, nskip))
            continue;
        char err[600] = "", fl[256];
        diag.name = cs[i].name;
        if (truth_run(&cs[i], &s, &rows[i], err, sizeof err)) {
            printf("%-28s  failed: %s\n", cs[i].name, err);
            failures++;
            continue;
        }
        const truth_row *r = &rows[i];
        ran[i] = 1;
        flag_names(r->flags, r->h_fallback, fl, sizeof fl);
        printf("%-28s %7zu %3zu %9.3f %3lld %8.3g %8.3g %9.4g %10.4g %8.3g %+6.1f%% "
               "%+7.2f %7.1f  %s\n", cs[i].name, r->d,
               cs[i].kind == TRUTH_DLN ? cs[i].layers : (size_t)0, r->lambda,
               (long long)r->mult, r->t, r->h, r->target, r->est, r->mcse,
               100 * r->rel, r->z, r->seconds, fl);
        fflush(stdout);
    }
    summary(cs, rows, ran, n);
    return failures || diag.save_failed ? 1 : 0;
}
