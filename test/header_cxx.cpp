// The public headers compile cleanly as C++11 and link from C++: a model
// with C++ callbacks runs a short probe.
#include <sive/sive.h>
#include <sive/data.h>
#include <sive/mlp.h>
#include <sive/dln.h>

static int grad(const void *theta, size_t dim, const sive_batch *, void *out,
                double *loss, void *)
{
    const double *th = static_cast<const double *>(theta);
    double *g = static_cast<double *>(out);
    *loss = 0.0;
    for (size_t i = 0; i < dim; i++) {
        g[i] = th[i];
        *loss += 0.5 * th[i] * th[i];
    }
    return 0;
}

static int group_loss(const void *, size_t, const sive_batch *b, double *gl, void *)
{
    for (size_t g = 0; g < b->n_groups; g++)
        gl[g] = static_cast<double>(g % 2);
    return 0;
}

int main()
{
    sive_probe *p = nullptr;
    sive_model m;
    if (sive_probe_new(&p) != SIVE_OK || sive_model_init(&m, sizeof m) != SIVE_OK)
        return 1;
    m.dtype = SIVE_F64;
    m.dim = 2;
    m.grad = grad;
    m.group_loss = group_loss;
    int ok = sive_probe_set_text(p, "steps", "100") == SIVE_OK &&
             sive_probe_set_int(p, SIVE_OPT_GROUPS, 4) == SIVE_OK &&
             sive_probe_set_int(p, SIVE_OPT_CHAINS, 1) == SIVE_OK;
    const double theta[2] = {0.5, -0.5};
    sive_result *r = nullptr;
    ok = ok && sive_probe_run(p, &m, theta, &r) == SIVE_OK &&
         sive_result_status(r) == SIVE_OK && sive_result_steps(r) == 100;
    sive_result_free(r);
    sive_model_destroy(&m);
    sive_probe_free(p);
    return ok ? 0 : 1;
}
