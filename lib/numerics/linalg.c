/* Small dense linear algebra (linalg.h). */
#include "linalg.h"

#include <float.h>
#include <math.h>
#include <string.h>

void sivei_gemm(const double *a, int ta, const double *b, int tb, double *c, size_t m,
                size_t k, size_t n)
{
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < n; j++) {
            double s = 0.0;
            for (size_t q = 0; q < k; q++)
                s += (ta ? a[q * m + r] : a[r * k + q]) * (tb ? b[j * k + q] : b[q * n + j]);
            c[r * n + j] = s;
        }
}

void sivei_identity(double *a, size_t n)
{
    memset(a, 0, n * n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i * n + i] = 1.0;
}

static void rotate(double *a, size_t rows, size_t n, size_t p, size_t q, double c, double s)
{
    for (size_t i = 0; i < rows; i++) {
        const double x = a[i * n + p], y = a[i * n + q];
        a[i * n + p] = c * x - s * y;
        a[i * n + q] = s * x + c * y;
    }
}

double sivei_col_norm2(const double *a, size_t m, size_t n, size_t j)
{
    double s = 0.0;
    for (size_t i = 0; i < m; i++)
        s += a[i * n + j] * a[i * n + j];
    return s;
}

int sivei_jacobi_cols(double *a, size_t m, size_t n, double *v)
{
    const double tol = (double)(m > 1 ? m : 1) * DBL_EPSILON;
    double fro = 0.0;
    for (size_t i = 0; i < m * n; i++)
        fro += a[i] * a[i];
    const double tiny = tol * tol * fro;
    sivei_identity(v, n);
    int sweep = 0;
    while (sweep < 60) {
        int rotated = 0;
        sweep++;
        for (size_t p = 0; p + 1 < n; p++)
            for (size_t q = p + 1; q < n; q++) {
                double al = 0.0, be = 0.0, ga = 0.0;
                for (size_t i = 0; i < m; i++) {
                    al += a[i * n + p] * a[i * n + p];
                    be += a[i * n + q] * a[i * n + q];
                    ga += a[i * n + p] * a[i * n + q];
                }
                if (!(fabs(ga) > tol * sqrt(al * be)) || al <= tiny || be <= tiny)
                    continue;
                const double ze = (be - al) / (2.0 * ga);
                const double tn = (ze >= 0.0 ? 1.0 : -1.0) / (fabs(ze) + sqrt(1.0 + ze * ze));
                const double c = 1.0 / sqrt(1.0 + tn * tn), s = c * tn;
                rotate(a, m, n, p, q, c, s);
                rotate(v, n, n, p, q, c, s);
                rotated = 1;
            }
        if (!rotated)
            break;
    }
    return sweep;
}
