/* The ground-truth suite (docs/validation.md): every case of tools/truth.c
 * probed with the given options, against the exact learning coefficient.
 *
 *   bench_truth [--quick] [--only TEXT] [--skip TEXT] [--t T] [--h-zero H] [--seed S]
 *               [--probe-seed S] [--threads K] [--population | --data N]
 *               [--OPTION VALUE]...
 *
 * --OPTION VALUE is any libsive option by name (--steps 20000, --c_h 0.5,
 * --h 0.1, --base_lr 0.01, --chains 8, ...).  --t replaces every case's t
 * (by default each case's t comes from the theory, truth_theory_t()).
 * --only / --skip keep / drop the cases whose name contains TEXT.
 * --quick runs the quick subset with 20 000 steps (unless --steps is
 * given).  --seed is the teacher's (frames, data); --probe-seed S sets
 * the probe's option seed.  --population / --data N put every DLN in population mode or on
 * N noiseless examples.  With SIVE_TRUTH_HEALTH set in the environment
 * each run's health text goes to stderr. */
#include "bench_common.h"
#include "truth.h"

#include <math.h>

static void usage(void)
{
    fprintf(stderr, "usage: bench_truth [--quick] [--only TEXT] [--skip TEXT] [--t T] [--h-zero H] "
                    "[--seed S] [--probe-seed S] [--threads K] [--population | --data N] "
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

int main(int argc, char **argv)
{
    truth_settings s;
    truth_settings_default(&s);
    int quick = 0, steps_set = 0;
    const char *only = NULL, *skip = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        sive_option opt;
        if (!strcmp(a, "--quick"))
            quick = 1;
        else if (!strcmp(a, "--population"))
            s.data_n = 0;
        else if (!v || strncmp(a, "--", 2))
            usage();
        else if (!strcmp(a, "--only"))
            only = v, i++;
        else if (!strcmp(a, "--skip"))
            skip = v, i++;
        else if (!strcmp(a, "--t"))
            s.t = atof(v), i++;
        else if (!strcmp(a, "--h-zero"))
            s.h_zero = atof(v), i++;
        else if (!strcmp(a, "--seed"))
            s.seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--probe-seed") && s.nsets < TRUTH_MAX_SETS) {
            char *kv = malloc(strlen(v) + 6);
            sprintf(kv, "seed=%s", v);
            s.sets[s.nsets++] = kv, i++;
        }
        else if (!strcmp(a, "--threads"))
            s.threads = atoi(v), i++;
        else if (!strcmp(a, "--data"))
            s.data_n = atoll(v), i++;
        else if (sive_option_by_name(a + 2, &opt) == SIVE_OK && s.nsets < TRUTH_MAX_SETS) {
            char *kv = malloc(strlen(a) + strlen(v) + 2);
            sprintf(kv, "%s=%s", a + 2, v);
            s.sets[s.nsets++] = kv;
            steps_set |= opt == SIVE_OPT_STEPS;
            i++;
        } else
            usage();
    }
    if (quick && !steps_set && s.nsets < TRUTH_MAX_SETS)
        s.sets[s.nsets++] = "steps=20000";
    bench_machine();
    printf("libsive %s; options:", sive_version_string());
    for (int i = 0; i < s.nsets; i++)
        printf(" %s", s.sets[i]);
    printf("%s; t %s\n\n", s.nsets ? "" : " (defaults)",
           isnan(s.t) ? "per case (theory)" : "fixed");
    printf("%-28s %7s %3s %9s %3s %8s %8s %9s %10s %8s %7s %7s %7s  %s\n", "case", "d",
           "L", "lambda", "m", "t", "h", "target_t", "lambda-hat", "mcse", "rel",
           "z", "sec", "flags");
    size_t n;
    const truth_case *cs = truth_cases(&n);
    truth_row rows[64];
    int ran[64] = {0}, failures = 0;
    for (size_t i = 0; i < n && i < 64; i++) {
        if ((quick && !cs[i].quick) || (only && !strstr(cs[i].name, only)) ||
            (skip && strstr(cs[i].name, skip)))
            continue;
        char err[600] = "", fl[256];
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
    return failures ? 1 : 0;
}
