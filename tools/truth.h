/* The ground-truth suite (docs/validation.md): deep linear networks,
 * normal-crossing monomials and sums of product monomials (multiplicity
 * above 1) whose learning coefficient is known exactly,
 * probed through the public API with any options.  Used by
 * bench/bench_truth (the whole suite) and test/test_truth (a subset). */
#ifndef SIVE_TOOLS_TRUTH_H
#define SIVE_TOOLS_TRUTH_H

#include <sive/sive.h>

#include <stddef.h>
#include <stdint.h>

enum { TRUTH_DLN = 1, TRUTH_MONO = 2, TRUTH_PROD = 3 };
#define TRUTH_MAX_LAYERS 8
#define TRUTH_MAX_SETS 32

typedef struct truth_case {
    const char *name;
    int kind;
    size_t layers, widths[TRUTH_MAX_LAYERS + 1], rank; /* DLN            */
    uint64_t n;             /* DLN: examples (noiseless data), 0 population */
    double scales[TRUTH_MAX_LAYERS]; /* DLN: rescaled factorisation, or 0 */
    uint32_t k[4];          /* monomial: exponents, cycled over the d coords;
                               product: one block's exponents (nk factors) */
    size_t nk, mono_d;      /* mono_d: d (a product: blocks times nk)       */
    int quick;              /* in the --quick subset                         */
} truth_case;

struct truth_row;

typedef struct truth_settings {
    double t;          /* NaN: each case's t from truth_theory_t()          */
    double h_zero;     /* absolute h when theta* = 0 and no h was set       */
    uint64_t seed;     /* teacher, frames and data                          */
    int threads;
    int64_t data_n;    /* -1: each case's; 0: population; > 0: examples   */
    int dln_gibbs;     /* DLN models supply the Gibbs layer move (0: GL)  */
    const char *sets[TRUTH_MAX_SETS]; /* "name=value" probe options          */
    int nsets;
    /* Called with each finished run's result before it is freed (bench_truth
     * --bad reads the diagnostics behind the flags), or NULL. */
    void (*inspect)(const sive_result *r, const struct truth_row *row, void *ctx);
    void *inspect_ctx;
} truth_settings;

typedef struct truth_row {
    size_t d;
    uint64_t n;        /* examples used, 0 = population                     */
    double lambda;     /* exact                                             */
    int64_t mult;
    double t, h;
    double target;     /* t^2 Var under the continuous tethered law, or NaN */
    double est, mcse;  /* summary SIVE (unclipped) and its MCSE             */
    double rel, z;     /* est/lambda - 1; (est - target or lambda)/mcse     */
    uint32_t flags;
    int h_fallback;    /* theta* = 0: the run used h_zero                   */
    double seconds;
} truth_row;

/* The suite's cases (static) and their number. */
const truth_case *truth_cases(size_t *n);
/* The case of that exact name, or NULL. */
const truth_case *truth_case_named(const char *name);
#ifdef ck_assert_msg
/* For the tests (include after <check.h>): the case of that name, the
 * test failing when there is none. */
static inline const truth_case *truth_case_find(const char *name)
{
    const truth_case *c = truth_case_named(name);
    ck_assert_msg(c != NULL, "no case %s", name);
    return c;
}
#endif
/* Default settings: t per case, h_zero 1, seed 1, 1 thread, no options. */
void truth_settings_default(truth_settings *s);
/* t for a case from the theory (docs/validation.md): 10^4, raised for a
 * deep network until the null sub-network's fluctuation scale
 * t^(-1/(2L)) is a third of the factor scale 1 (t = 9^L). */
double truth_theory_t(const truth_case *c);
/* Run one case; 0 or a libsive status with a message in err. */
int truth_run(const truth_case *c, const truth_settings *s, truth_row *row,
              char *err, size_t errlen);
/* t^2 Var[w^(2k)] for p(w) ~ exp(-t w^(2k) - w^2/(2h^2)) by quadrature. */
double truth_mono_target(uint32_t k, double t, double h);
/* t^2 Var[u^(2a) v^(2b)] for p(u, v) ~ exp(-t u^(2a) v^(2b) - (u^2 + v^2)
 * /(2h^2)) by a 1-D quadrature over u (the v-moments in closed form); one
 * of a, b must be 1, else NaN. */
double truth_prod_target(uint32_t a, uint32_t b, double t, double h);
/* lambda and multiplicity of a sum of `blocks` independent blocks
 * prod_{i < nk} w_i^(2 k_i): blocks * min 1/(2 k_i) and
 * 1 + blocks * (number of i attaining the min - 1). */
double truth_prod_lambda(const uint32_t *k, size_t nk, size_t blocks, int64_t *mult);

#endif
