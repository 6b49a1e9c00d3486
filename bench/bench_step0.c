/* K1 = u^2 with step_extrapolate (issue 18, part 4): the continuous-law
 * value t^2 Var = 0.5 against ULA's 1/(2(1-a)^2) (0.554 at a = 0.05).
 * t = 1e4, h = 2, centre 0.2, no evaluation noise (N = 2, constant
 * floor), one run of all chains (memory: 2 x chains x steps x 40 bytes).
 * Usage: bench_step0 [chains (200)] [steps (200000)] [base_lr (0.05)]. */
#include "quad.h"

#include <sive/sive.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* K1 = 100 + u^2 without evaluation noise (test/quad.h) */
static quad_fixture k1 = {.k = 2.0, .l0 = 100.0, .sigma = 0.0};

int main(int argc, char **argv)
{
    int64_t chains = argc > 1 ? atoll(argv[1]) : 200, steps = argc > 2 ? atoll(argv[2]) : 200000;
    double a = argc > 3 ? atof(argv[3]) : 0.05, th = 0.2;
    sive_model m = quad_fixture_model(&k1, 1);
    sive_probe *p = NULL;
    sive_result *r = NULL;
    if (sive_probe_new(&p) || sive_probe_set_double(p, SIVE_OPT_H, 2.0) ||
        sive_probe_set_double(p, SIVE_OPT_BASE_LR, a) ||
        sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
        sive_probe_set_int(p, SIVE_OPT_GROUPS, 2) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, chains) ||
        sive_probe_set_int(p, SIVE_OPT_STEP_EXTRAPOLATE, 1) ||
        sive_probe_run(p, &m, &th, &r)) {
        fprintf(stderr, "bench_step0: %s\n", sive_probe_errmsg(p));
        return 1;
    }
    double s0 = sive_result_stat(r, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY);
    double se = sive_result_stat(r, SIVE_STAT_MCSE_STEP0, SIVE_SUMMARY);
    printf("K1, base_lr %g, %lld chains x %lld steps\n", a, (long long)chains, (long long)steps);
    printf("lambda-hat at base_lr: %.5f +- %.5f (ULA 1/(2(1-a)^2) = %.5f)\n",
           sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY), sive_result_mcse(r),
           0.5 / ((1.0 - a) * (1.0 - a)));
    printf("step 0: %.5f +- %.5f (spread / sqrt K %.5f); against 0.5: %+.2f %% +- %.2f %%\n", s0,
           se, sive_result_stat_std(r, SIVE_STAT_SIVE_STEP0) / sqrt((double)chains),
           100.0 * (s0 / 0.5 - 1.0), 100.0 * se / 0.5);
    printf("health: %s\n", sive_result_health(r));
    sive_result_free(r);
    sive_probe_free(p);
    return 0;
}
