/* The funnel u^2 v^2's law under the tether, by quadrature, and the
 * Metropolis-adjusted probe the tests of the samplers start from
 * (test_metropolis.c, test_lowrank.c, test_orbit.c). */
#ifndef SIVE_TEST_FUNNEL_H
#define SIVE_TEST_FUNNEL_H

#include <check.h>
#include <math.h>
#include <sive/sive.h>
#include <sive/experimental.h>

/* t^2 Var[u^2 |v|^2] under exp(-t u^2 |v|^2 - (u^2 + |v|^2)/(2 h^2)), v of
 * dimension kv: given u, v is N(0, s^2 I), 1/s^2 = 2 t u^2 + 1/h^2, so
 * E[L | u] = kv u^2 s^2 and E[L^2 | u] = kv (kv + 2) u^4 s^4; u's marginal
 * density is proportional to exp(-u^2/(2h^2)) s^kv.  Simpson's rule in u on
 * |u| <= 12 h. */
static inline double funnel_continuous(double t, double h, int kv)
{
    const int n = 200000;
    const double U = 12.0 * h, du = 2.0 * U / n;
    double z = 0.0, m1 = 0.0, m2 = 0.0;
    for (int i = 0; i <= n; i++) {
        const double u = -U + i * du, s2 = 1.0 / (2.0 * t * u * u + 1.0 / (h * h));
        const double w = (i == 0 || i == n ? 1.0 : i % 2 ? 4.0 : 2.0) *
                         exp(-u * u / (2.0 * h * h)) * pow(s2, 0.5 * kv);
        z += w;
        m1 += w * kv * u * u * s2;
        m2 += w * kv * (kv + 2.0) * u * u * u * u * s2 * s2;
    }
    m1 /= z;
    return t * t * (m2 / z - m1 * m1);
}

/* The funnel u^2 v^2 (kv = 1). */
static inline double u2v2_continuous(double t, double h)
{
    return funnel_continuous(t, h, 1);
}

/* A Metropolis-adjusted probe at (t, h) with 4 groups, the base the orbit
 * and low-rank tests add their own option to. */
static inline sive_probe *funnel_probe(double t, double h, int64_t steps, int64_t chains,
                                       int64_t threads, int64_t seed)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, h), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, t), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, chains), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, threads), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, seed), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    return p;
}

#endif
