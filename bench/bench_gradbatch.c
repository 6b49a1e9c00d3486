/* B_grad and the target on a deep linear network with per-example losses
 * (issue 19; docs/performance.md "Gradient control variates on a DLN"):
 * lambda-hat of the full-batch chain (B_grad = n, no replacement) against
 * a small batch with gradient control variates and without them.
 *
 *   bench_gradbatch [--widths 10,10,10,10] [--rank 3] [--n 2048]
 *                   [--noise 0.5] [--batch 64] [--train-steps 2000]
 *                   [--seed S] [--runs fgpcxy] [--compensate K]
 *                   [--OPTION VALUE]...
 *
 * The data: n examples x ~ N(0, I), y = W_T x + noise * eps (sive_dln_set_data
 * with noise > 0, so the per-example gradients at theta* do not vanish and
 * the batch matters).  theta*: the teacher's balanced factorisation, then
 * train-steps steps of full-batch gradient descent (lr 0.05), near the
 * empirical minimum.  --OPTION VALUE is any libsive option by name, the
 * same for every run (defaults here: groups 64, eval_stride 4,
 * control_variate 1, steps 20000, chains 4, threads 2: the evaluation only,
 * not the target).  Every run has the same seed, so the chains share their
 * Langevin noise: the per-chain paired difference is printed too.
 *
 * Rows: f = full batch, g = B_grad `batch` with gradient control variates,
 * p = B_grad `batch` plain, c = as g with grad_noise_compensation K (default
 * 8), x = as g with grad_extrapolate (the estimate extrapolated from
 * B_grad and 2 B_grad to the full batch, sive_full_batch), y = as c with
 * grad_extrapolate (--runs: which of them, default fgp); then each - f
 * with the combined MCSE sqrt(MCSE_a^2 + MCSE_b^2), z and the relative
 * difference. */
#include "bench_common.h"

#include <sive/dln.h>

#include <math.h>

#define MAX_SETS 32
#define MAX_CHAINS 64

typedef struct run_out {
    double est, mcse, sec, clipped, per_chain[MAX_CHAINS];
    int32_t chains;
    uint32_t flags;
} run_out;

static void usage(void)
{
    fprintf(stderr, "usage: bench_gradbatch [--widths H0,H1,..] [--rank R] [--n N] "
                    "[--noise S] [--batch B] [--train-steps K] [--seed S] "
                    "[--runs fgpcxy] [--compensate K] "
                    "[--OPTION VALUE]...\n");
    exit(2);
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "%s: %s\n", what, msg);
    exit(1);
}

/* One probe run with the shared options plus grad_batch, replacement,
 * grad_control_variate and grad_noise_compensation. */
static void run(const sive_model *model, const double *theta, char **sets, int nsets,
                int64_t batch, int repl, int gcv, int64_t nc, int ex, run_out *o)
{
    sive_probe *p = NULL;
    if (sive_probe_new(&p))
        die("probe", sive_last_errmsg());
    const char *base[] = {"groups=64", "eval_stride=4", "control_variate=1",
                          "steps=20000", "chains=4", "threads=2"};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        char name[32];
        const char *eq = strchr(base[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - base[i]), base[i]);
        sive_probe_set_text(p, name, eq + 1);
    }
    for (int i = 0; i < nsets; i++) {
        char *eq = strchr(sets[i], '=');
        *eq = 0;
        int rc = sive_probe_set_text(p, sets[i], eq + 1);
        *eq = '=';
        if (rc)
            die(sets[i], sive_probe_errmsg(p));
    }
    if (sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, batch) ||
        sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, repl) ||
        sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, gcv) ||
        sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_COMPENSATION, nc) ||
        sive_probe_set_int(p, SIVE_OPT_GRAD_EXTRAPOLATE, ex))
        die("options", sive_probe_errmsg(p));
    sive_result *r = NULL;
    double t0 = bench_now();
    if (sive_probe_run(p, model, theta, &r) || sive_result_status(r))
        die("run", r ? sive_result_errmsg(r) : sive_probe_errmsg(p));
    o->sec = bench_now() - t0;
    const sive_stat est = ex ? SIVE_STAT_SIVE_FULL_BATCH : SIVE_STAT_SIVE_UNCLIPPED;
    o->est = sive_result_stat(r, est, SIVE_SUMMARY);
    o->mcse = ex ? sive_result_stat(r, SIVE_STAT_MCSE_FULL_BATCH, SIVE_SUMMARY)
                 : sive_result_mcse(r);
    o->flags = sive_result_flags(r);
    o->chains = sive_result_chains(r);
    o->clipped = sive_result_stat(r, SIVE_STAT_GRAD_NOISE_CLIPPED, SIVE_SUMMARY);
    for (int32_t c = 0; c < o->chains && c < MAX_CHAINS; c++)
        o->per_chain[c] = sive_result_stat(r, est, c);
    if (ex)
        printf("   (at B_grad %lld: %.4g +- %.3g)\n", (long long)batch,
               sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY),
               sive_result_mcse(r));
    sive_result_free(r);
    sive_probe_free(p);
}

static void print_run(const char *name, int64_t batch, int repl, int gcv, const run_out *o)
{
    printf("%-2s %7lld %5d %4d %10.4g %8.3g %8.1f  flags 0x%02x", name, (long long)batch,
           repl, gcv, o->est, o->mcse, o->sec, (unsigned)o->flags);
    if (!isnan(o->clipped))
        printf("  clipped %.3g", o->clipped);
    printf("\n");
    fflush(stdout);
}

/* a - b: combined MCSE, z, relative difference, paired per-chain SE. */
static void compare(const char *name, const run_out *a, const run_out *b)
{
    const double diff = a->est - b->est, se = hypot(a->mcse, b->mcse);
    double m = 0.0, s2 = 0.0;
    const int32_t k = a->chains < MAX_CHAINS ? a->chains : MAX_CHAINS;
    for (int32_t c = 0; c < k; c++)
        m += (a->per_chain[c] - b->per_chain[c]) / k;
    for (int32_t c = 0; c < k; c++) {
        double e = a->per_chain[c] - b->per_chain[c] - m;
        s2 += e * e / (k - 1);
    }
    printf("%s: difference %+.4g, combined MCSE %.3g, z %+.2f, relative %+.2f%%; "
           "paired by chain %+.4g +- %.3g (%d chains)\n", name, diff, se, diff / se,
           100.0 * diff / b->est, m, sqrt(s2 / k), (int)k);
}

/* The acceptance: |a - f| <= 2 combined MCSE and <= 2 % of f. */
static void acceptance(const char *name, const run_out *a, const run_out *f)
{
    const double diff = fabs(a->est - f->est);
    printf("acceptance for %s (|%s - f| <= 2 combined MCSE and <= 2%% of f): %s\n", name, name,
           diff <= 2 * hypot(a->mcse, f->mcse) && diff <= 0.02 * fabs(f->est) ? "pass"
                                                                                : "FAIL");
}

static size_t parse_widths(const char *s, size_t *w)
{
    size_t k = 0;
    for (char *end; *s && k <= SIVE_DLN_MAX_LAYERS; s = *end ? end + 1 : end) {
        w[k++] = strtoull(s, &end, 10);
        if (end == s)
            usage();
    }
    return k;
}

int main(int argc, char **argv)
{
    size_t widths[SIVE_DLN_MAX_LAYERS + 1] = {10, 10, 10, 10}, nw = 4, rank = 3;
    uint64_t n = 2048, train_steps = 2000, seed = 1;
    double noise = 0.5;
    int64_t batch = 64, compensate = 8;
    const char *runs = "fgp";
    char *sets[MAX_SETS];
    int nsets = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        sive_option opt;
        if (!v || strncmp(a, "--", 2))
            usage();
        else if (!strcmp(a, "--widths"))
            nw = parse_widths(v, widths);
        else if (!strcmp(a, "--rank"))
            rank = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--n"))
            n = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--noise"))
            noise = atof(v);
        else if (!strcmp(a, "--batch"))
            batch = atoll(v);
        else if (!strcmp(a, "--train-steps"))
            train_steps = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--compensate"))
            compensate = atoll(v);
        else if (!strcmp(a, "--runs"))
            runs = v;
        else if (sive_option_by_name(a + 2, &opt) == SIVE_OK && nsets < MAX_SETS) {
            sets[nsets] = malloc(strlen(a) + strlen(v) + 2);
            sprintf(sets[nsets++], "%s=%s", a + 2, v);
        } else
            usage();
    }
    if (nw < 2)
        usage();
    bench_machine(); /* before any BLIS use (it picks the kernels) */
    sive_dln *dln = NULL;
    sive_dln_work *w = NULL;
    if (sive_dln_new(&dln, widths, nw - 1, rank, NULL, seed) ||
        sive_dln_set_data(dln, n, noise, seed + 1) ||
        sive_dln_work_new(&w, dln, 0, 1))
        die("dln", sive_last_errmsg());
    const size_t d = sive_dln_dim(dln);
    double *theta = malloc(d * sizeof *theta), loss = NAN;
    if (!theta || sive_dln_factorisation(dln, NULL, seed + 2, theta) ||
        sive_dln_train(dln, w, theta, 0.05, train_steps, (size_t)n, seed + 3, &loss))
        die("theta*", sive_last_errmsg());
    sive_model model;
    if (sive_model_init(&model, sizeof model) || sive_dln_model(&model, dln, 1))
        die("model", sive_last_errmsg());
    printf("libsive %s; DLN L %zu widths", sive_version_string(), nw - 1);
    for (size_t s = 0; s < nw; s++)
        printf("%s%zu", s ? "-" : " ", widths[s]);
    printf(" rank %zu, d %zu; n %llu, noise %g, seed %llu; theta*: %llu full-batch GD "
           "steps, train loss %.6g\noptions: groups=64 eval_stride=4 control_variate=1 "
           "steps=20000 chains=4 threads=2 (defaults here)", rank, d,
           (unsigned long long)n, noise, (unsigned long long)seed,
           (unsigned long long)train_steps, loss);
    for (int i = 0; i < nsets; i++)
        printf(" %s", sets[i]);
    printf("\n\nrun B_grad repl gcv lambda-hat     mcse      sec\n");
    run_out f, g, pl, cp, xg, yc;
    const int rf = !!strchr(runs, 'f'), rg = !!strchr(runs, 'g'), rp = !!strchr(runs, 'p'),
              rc = !!strchr(runs, 'c'), rx = !!strchr(runs, 'x'), ry = !!strchr(runs, 'y');
    if (rf) {
        run(&model, theta, sets, nsets, (int64_t)n, 0, 0, 0, 0, &f);
        print_run("f", (int64_t)n, 0, 0, &f);
    }
    if (rg) {
        run(&model, theta, sets, nsets, batch, 1, 1, 0, 0, &g);
        print_run("g", batch, 1, 1, &g);
    }
    if (rp) {
        run(&model, theta, sets, nsets, batch, 1, 0, 0, 0, &pl);
        print_run("p", batch, 1, 0, &pl);
    }
    if (rc) {
        run(&model, theta, sets, nsets, batch, 1, 1, compensate, 0, &cp);
        printf("c (grad_noise_compensation %lld):\n", (long long)compensate);
        print_run("c", batch, 1, 1, &cp);
    }
    if (rx) {
        printf("x (grad_extrapolate):\n");
        run(&model, theta, sets, nsets, batch, 1, 1, 0, 1, &xg);
        print_run("x", batch, 1, 1, &xg);
    }
    if (ry) {
        printf("y (grad_noise_compensation %lld, grad_extrapolate):\n", (long long)compensate);
        run(&model, theta, sets, nsets, batch, 1, 1, compensate, 1, &yc);
        print_run("y", batch, 1, 1, &yc);
    }
    const struct {
        int on;
        const char *name;
        const run_out *o;
    } rows[] = {{rg, "g", &g}, {rp, "p", &pl}, {rc, "c", &cp}, {rx, "x", &xg}, {ry, "y", &yc}};
    const size_t nrows = sizeof rows / sizeof rows[0];
    for (size_t i = 0; rf && i < nrows; i++)
        if (rows[i].on) {
            char name[8];
            snprintf(name, sizeof name, "%s - f", rows[i].name);
            compare(name, rows[i].o, &f);
        }
    for (size_t i = 0; rf && i < nrows; i++)
        if (rows[i].on && rows[i].o != &pl)
            acceptance(rows[i].name, rows[i].o, &f);
    sive_model_destroy(&model);
    sive_dln_work_free(w);
    sive_dln_free(dln);
    free(theta);
    for (int i = 0; i < nsets; i++)
        free(sets[i]);
    return 0;
}
