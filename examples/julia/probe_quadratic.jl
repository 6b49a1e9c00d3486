# Probe a quadratic whose answer is known exactly: a line-by-line mirror of
# examples/python/probe_quadratic.py (same model, options and seed, so the
# same numbers).  With x = theta - theta*, the loss is L0 + K(x),
# K(x) = g.x + x.H.x / 2, observed with Gaussian evaluation noise sigma per
# group; under the tethered ULA chain t^2 Var[K] has a closed form
# (docs/theory.md, "Exact targets").
#
# Usage: SIVE_LIBRARY=build/lib/libsive.so julia examples/julia/probe_quadratic.jl [seed]
include(joinpath(@__DIR__, "sive.jl"))
using .Sive
using Printf

const D = 8
const I = 0:D-1
const H = 1.0 .+ 0.5 .* I
const G = 0.02 .* (1 .+ I .% 3) .* ifelse.(I .% 2 .== 1, -1.0, 1.0)
const THETA_STAR = 0.1 .* (I .+ 1)
const L0, SIGMA = 1.0, 1e-3          # L0 is a loss floor the estimator never needs
const T, A, RADIUS = 1e4, 0.05, 0.05

function k(theta)
    x = theta .- THETA_STAR
    return sum(G .* x .+ 0.5 .* H .* x .* x)
end

# Exact gradient: an analytic model has no mini-batches (batch.index is C_NULL).
function grad!(g, theta, batch)
    g .= G .+ H .* (theta .- THETA_STAR)
    return L0 + k(theta)
end

# N noisy observations; the noise is drawn from the per-call seed with the
# library's generator, so the run is reproducible (and equals the Python one).
function group_loss!(losses, theta, batch)
    normals!(Rng(batch.seed, 0), losses)
    losses .= L0 .+ k(theta) .+ SIGMA .* losses
    return nothing
end

function exact_lambda()
    eta = A / T
    rho = 1.0 .- A .* H .- eta / RADIUS^2
    mu = -A .* G ./ (1.0 .- rho)
    v = 2.0 * eta ./ (1.0 .- rho .^ 2)
    return T^2 * sum((G .+ H .* mu) .^ 2 .* v .+ 0.5 .* H .^ 2 .* v .^ 2)
end

function main()
    seed = length(ARGS) > 0 ? parse(Int, ARGS[1]) : 1
    # An analytic model: no data set, so the per-group form of the loss.
    model = Model(D, grad!; group_loss=group_loss!)
    probe = Probe(; t=T, base_lr=A, h=RADIUS, steps=4000, groups=16, chains=4, seed=seed)
    r = Sive.run(probe, model, collect(THETA_STAR))
    lam = Sive.stat(r, Sive.STAT_SIVE_UNCLIPPED)
    exact = exact_lambda()
    z = (lam - exact) / mcse(r)
    @printf("lambda = %.3f (MCSE %.3f), exact %.3f, z = %.2f, ESS %.0f\n",
            lam, mcse(r), exact, z, ess(r))
    @printf("raw variance %.3f - noise correction %.3f (SE %.3f)\n",
            Sive.stat(r, Sive.STAT_RAW_VARIANCE), noise_correction(r), noise_correction_std(r))
    isempty(health(r)) || println("health:\n", health(r))
    close(r)
    close(probe)
    ok = isfinite(z) && abs(z) <= 4.0
    println("status ", ok ? "OK" : "FAILED")
    return ok ? 0 : 1
end

exit(main())
