/* Exact moments of a tethered ULA chain on a quadratic (docs/theory.md,
 * "Exact targets"), shared by the tests that check estimators against
 * closed forms.  In the eigenbasis of the Hessian every coordinate is an
 * independent AR(1) process. */
#ifndef SIVE_TEST_EXACT_ULA_H
#define SIVE_TEST_EXACT_ULA_H

#include <math.h>

/* For x ~ N(mu, v) following x' = rho x - a g + sqrt(2 eta) xi with
 * rho = 1 - a H - eta/h^2 (stationary mu = -a g/(1-rho),
 * v = 2 eta/(1-rho^2)), f = b x + c x^2 has
 *   Cov(f_0, f_k) = (b + 2 c mu)^2 v rho^k + 2 c^2 v^2 rho^2k.
 * Returns Var(f) and stores in *var_mean the variance of the mean of n
 * consecutive values, (1/n) sum_{|k|<n} (1 - |k|/n) Cov(f_0, f_k).  b is
 * the chain's own g when f is the loss the chain follows; another
 * function of x (an evaluation view's loss) has its own b and c. */
static inline double exact_ula_coord_var_f(double a, double eta, double h, double H,
                                           double g, double b, double c, double n,
                                           double *var_mean)
{
    double rho = 1.0 - a * H - eta / (h * h);
    double mu = -a * g / (1.0 - rho), v = 2.0 * eta / (1.0 - rho * rho);
    const double amp[2] = {(b + 2.0 * c * mu) * (b + 2.0 * c * mu) * v, 2.0 * c * c * v * v};
    const double r[2] = {rho, rho * rho};
    *var_mean = 0.0;
    for (int j = 0; j < 2; j++) {
        double s = r[j] / (1.0 - r[j]) -
                   r[j] * (1.0 - pow(r[j], n)) / (n * (1.0 - r[j]) * (1.0 - r[j]));
        *var_mean += amp[j] * (1.0 + 2.0 * s) / n;
    }
    return amp[0] + amp[1];
}

/* The same for the chain's own loss: f = g x + c x^2. */
static inline double exact_ula_coord_var(double a, double eta, double h, double H,
                                         double g, double c, double n,
                                         double *var_mean)
{
    return exact_ula_coord_var_f(a, eta, h, H, g, g, c, n, var_mean);
}

#endif
