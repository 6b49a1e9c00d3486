// A trainer that measures its own model while it learns: every K SGD steps
// it hands the current parameters to libsive, in process, and prints the
// local learning coefficient of that checkpoint.
//
// The model is deliberately not libsive's MLP: a two-layer tanh network
//     y_hat(x) = sum_j w2_j tanh(w1_j x + b1_j) + b2
// fitted by mean squared error to y = sin(3x) + 0.1 noise on n = 256 points.
// libsive only needs two callbacks that evaluate this model on the example
// indices it draws (a mean-loss gradient and per-example losses), so any
// model plugs in the same way.
//
// Build standalone:  c++ -std=c++17 -O2 main.cpp $(pkg-config --cflags --libs libsive)
// Usage: cpp-trainer [steps=3000] [probe_every=500]
#include <sive/sive.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

namespace {

constexpr std::size_t kHidden = 16;
// Layout of theta: w1[H], b1[H], w2[H], b2.
constexpr std::size_t kDim = 3 * kHidden + 1;

struct Data {
    std::vector<double> x, y;
};

Data make_data(std::size_t n, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::normal_distribution<double> noise(0.0, 0.1);
    Data d;
    for (std::size_t i = 0; i < n; i++) {
        double x = u(gen);
        d.x.push_back(x);
        d.y.push_back(std::sin(3.0 * x) + noise(gen));
    }
    return d;
}

// Mean squared error over idx[0..n-1]; adds its gradient to grad when not
// null.  Stack scratch only: libsive may call this from several threads.
double mse(const double *theta, const Data &data, const std::uint64_t *idx,
           std::size_t n, double *grad)
{
    const double *w1 = theta, *b1 = theta + kHidden, *w2 = theta + 2 * kHidden;
    const double b2 = theta[3 * kHidden];
    if (grad)
        std::fill(grad, grad + kDim, 0.0);
    double sum = 0.0;
    for (std::size_t k = 0; k < n; k++) {
        const double x = data.x[idx[k]], y = data.y[idx[k]];
        std::array<double, kHidden> a;
        double out = b2;
        for (std::size_t j = 0; j < kHidden; j++) {
            a[j] = std::tanh(w1[j] * x + b1[j]);
            out += w2[j] * a[j];
        }
        const double r = out - y;
        sum += r * r;
        if (!grad)
            continue;
        const double dr = 2.0 * r / static_cast<double>(n);
        for (std::size_t j = 0; j < kHidden; j++) {
            const double dz = dr * w2[j] * (1.0 - a[j] * a[j]);
            grad[j] += dz * x;
            grad[kHidden + j] += dz;
            grad[2 * kHidden + j] += dr * a[j];
        }
        grad[3 * kHidden] += dr;
    }
    return sum / static_cast<double>(n);
}

// libsive callbacks: user is the training set; theta and grad hold kDim
// doubles (the model's dtype is SIVE_F64).
int grad_cb(const void *theta, std::size_t, const sive_batch *b, void *grad,
            double *loss, void *user)
{
    *loss = mse(static_cast<const double *>(theta), *static_cast<const Data *>(user),
                b->index, b->group_size, static_cast<double *>(grad));
    return 0; // a non-finite loss is not an error: libsive reports it as a divergence
}

// Per-example losses: libsive draws the evaluation groups, evaluates each
// distinct example once through this callback and forms the group means.
int loss_cb(const void *theta, std::size_t, const sive_batch *b, double *losses,
            void *user)
{
    const auto *th = static_cast<const double *>(theta);
    const auto &data = *static_cast<const Data *>(user);
    for (std::size_t i = 0; i < b->group_size; i++)
        losses[i] = mse(th, data, b->index + i, 1, nullptr);
    return 0;
}

// RAII for the two handle types, so that early returns cannot leak.
struct ProbeDeleter {
    void operator()(sive_probe *p) const { sive_probe_free(p); }
};
struct ResultDeleter {
    void operator()(sive_result *r) const { sive_result_free(r); }
};

} // namespace

int main(int argc, char **argv)
{
    const long steps = argc > 1 ? std::atol(argv[1]) : 3000;
    const long every = std::max(1L, argc > 2 ? std::atol(argv[2]) : 500L);
    const std::size_t batch = 32;
    const double lr = 0.05;

    const Data data = make_data(256, 7);
    std::vector<std::uint64_t> all(data.x.size());
    for (std::size_t i = 0; i < all.size(); i++)
        all[i] = i;

    std::vector<double> theta(kDim), grad(kDim);
    std::mt19937_64 gen(1);
    std::normal_distribution<double> init(0.0, 1.0);
    for (std::size_t j = 0; j < 2 * kHidden; j++)
        theta[j] = init(gen);
    for (std::size_t j = 2 * kHidden; j < kDim; j++)
        theta[j] = init(gen) / std::sqrt(double(kHidden));

    // The model: this network on this training set, described by value.
    sive_model model;
    sive_model_init(&model, sizeof model);
    model.dtype = SIVE_F64;
    model.dim = kDim;
    model.n_examples = data.x.size();
    model.grad = grad_cb;
    model.loss = loss_cb;
    model.user = const_cast<Data *>(&data);

    // One probe for the whole run: options persist, each run is independent.
    // The seed stays fixed, so successive checkpoints are probed with the
    // same random streams, which makes their differences less noisy.
    sive_probe *raw = nullptr;
    if (int rc = sive_probe_new(&raw)) {
        std::fprintf(stderr, "sive_probe_new: %s\n", sive_strerror(rc));
        return 1;
    }
    std::unique_ptr<sive_probe, ProbeDeleter> probe(raw);
    sive_probe *p = probe.get();
    // t = n*beta with beta = 1/log(n), the usual WBIC temperature; the
    // step and the tether keep their defaults.  The budget is small so that
    // the example runs in seconds.
    const double t = double(data.x.size()) / std::log(double(data.x.size()));
    int rc = 0;
    if ((rc = sive_probe_set_double(p, SIVE_OPT_T, t)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_STEPS, 2000)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_GROUPS, 16)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 32)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 32)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_CHAINS, 2)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_THREADS, 2))) {
        std::fprintf(stderr, "probe options: %s\n", sive_probe_errmsg(p));
        return 1;
    }

    std::printf("libsive %s, %zu parameters, %zu examples, t = %.1f\n",
                sive_version_string(), kDim, data.x.size(), t);
    int failures = 0;
    std::vector<std::uint64_t> idx(batch);
    for (long step = 1; step <= steps; step++) {
        for (auto &i : idx)
            i = gen() % data.x.size();
        mse(theta.data(), data, idx.data(), batch, grad.data());
        for (std::size_t j = 0; j < kDim; j++)
            theta[j] -= lr * grad[j];
        if (step % every != 0)
            continue;

        const double loss = mse(theta.data(), data, all.data(), all.size(), nullptr);
        sive_result *rr = nullptr;
        rc = sive_probe_run(p, &model, theta.data(), &rr); // theta is only read
        if (rc) { // no result: the model or the options were refused
            std::fprintf(stderr, "probe at step %ld: %s\n", step, sive_probe_errmsg(p));
            return 1;
        }
        std::unique_ptr<sive_result, ResultDeleter> r(rr);
        const int status = sive_result_status(r.get());
        std::printf("step %5ld  loss %.4f  lambda %.3f (MCSE %.3f)  ESS %.0f  status %s\n", step,
                    loss, sive_result_lambda(r.get()), sive_result_mcse(r.get()),
                    sive_result_ess(r.get()), status == SIVE_OK ? "OK" : sive_strerror(status));
        if (status) {
            std::fprintf(stderr, "probe at step %ld: %s\n", step, sive_result_errmsg(r.get()));
            failures++;
        }
        std::fflush(stdout);
    }
    return failures ? 1 : 0;
}
