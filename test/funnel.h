/* The funnel u^2 v^2's law under the tether, by quadrature (the tests of
 * the Metropolis-adjusted samplers: test_metropolis.c, test_lowrank.c). */
#ifndef SIVE_TEST_FUNNEL_H
#define SIVE_TEST_FUNNEL_H

#include <math.h>

/* t^2 Var[u^2 v^2] under exp(-t u^2 v^2 - (u^2 + v^2)/(2 h^2)): given u,
 * v is N(0, s^2), 1/s^2 = 2 t u^2 + 1/h^2, and u's marginal density is
 * proportional to exp(-u^2/(2h^2)) s(u); Simpson's rule in u on |u| <= 12 h. */
static inline double u2v2_continuous(double t, double h)
{
    const int n = 200000;
    const double U = 12.0 * h, du = 2.0 * U / n;
    double z = 0.0, m1 = 0.0, m2 = 0.0;
    for (int i = 0; i <= n; i++) {
        const double u = -U + i * du, s2 = 1.0 / (2.0 * t * u * u + 1.0 / (h * h));
        const double w = (i == 0 || i == n ? 1.0 : i % 2 ? 4.0 : 2.0) *
                         exp(-u * u / (2.0 * h * h)) * sqrt(s2);
        z += w;
        m1 += w * u * u * s2;
        m2 += w * 3.0 * u * u * u * u * s2 * s2;
    }
    m1 /= z;
    return t * t * (m2 / z - m1 * m1);
}

#endif
