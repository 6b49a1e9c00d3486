# A minimal ccall client of libsive: probe handle, float64 callbacks, the
# result's main numbers, and the library's RNG for a model's own noise.
# Untested here (Julia is not packaged in Debian 12): see README.md.
#
# The library is $SIVE_LIBRARY when set, else "libsive" on the loader path.
module Sive

# run and stat are not exported: they would clash with Base.run and Base.stat.
export Probe, SiveError, setoption!, lambda, mcse, ess, health, noise_correction,
       noise_correction_std, chains_ok, Rng, normals!

const libsive = get(ENV, "SIVE_LIBRARY", "libsive")

# Options (sive.h).  The C API has one setter per type.
const OPT_T, OPT_BASE_LR, OPT_H, OPT_C_H, OPT_STEPS, OPT_BURN_IN = 1, 2, 3, 4, 5, 6
const OPT_GROUPS, OPT_EVAL_BATCH, OPT_GRAD_BATCH, OPT_DATA_SIZE = 7, 8, 9, 10
const OPT_CHAINS, OPT_THREADS, OPT_SEED, OPT_REPLACEMENT = 11, 12, 13, 14
const OPT_EVAL_STRIDE, OPT_ANCHOR = 15, 16
const DOUBLE_OPTIONS = (OPT_T, OPT_BASE_LR, OPT_H, OPT_C_H, OPT_BURN_IN, OPT_ANCHOR)
const OPTIONS = Dict(:t => OPT_T, :base_lr => OPT_BASE_LR, :h => OPT_H, :c_h => OPT_C_H,
                     :steps => OPT_STEPS, :burn_in => OPT_BURN_IN, :groups => OPT_GROUPS,
                     :eval_batch => OPT_EVAL_BATCH, :grad_batch => OPT_GRAD_BATCH,
                     :data_size => OPT_DATA_SIZE, :chains => OPT_CHAINS,
                     :threads => OPT_THREADS, :seed => OPT_SEED,
                     :replacement => OPT_REPLACEMENT, :eval_stride => OPT_EVAL_STRIDE,
                     :anchor => OPT_ANCHOR)

# Statistics (sive_stat) used below; SUMMARY asks for the mean over chains.
const STAT_SIVE, STAT_SIVE_UNCLIPPED, STAT_RAW_VARIANCE = 0, 1, 2
const SUMMARY = Int32(-1)

# Layout of sive_batch.
struct Batch
    index::Ptr{UInt64}   # C_NULL for analytic models (data size 0)
    n_groups::Csize_t
    group_size::Csize_t
    seed::UInt64
    chain::Int32
    reserved::Int32
    step::Int64
end

strerror(rc) = unsafe_string(ccall((:sive_strerror, libsive), Cstring, (Cint,), rc))
last_errmsg() = unsafe_string(ccall((:sive_last_errmsg, libsive), Cstring, ()))
version() = unsafe_string(ccall((:sive_version_string, libsive), Cstring, ()))

struct SiveError <: Exception
    status::Cint
    message::String
end
Base.showerror(io::IO, e::SiveError) =
    print(io, "libsive: ", strerror(e.status), isempty(e.message) ? "" : ": " * e.message)

# The library's PCG32 generator (sive_rng), passed to C by reference.
mutable struct Rng
    state::UInt64
    inc::UInt64
    function Rng(seed::Integer, stream::Integer=0)
        g = new(0, 0)
        ccall((:sive_rng_seed, libsive), Cvoid, (Ref{Rng}, UInt64, UInt64), g, seed, stream)
        return g
    end
end
normals!(g::Rng, out::Vector{Float64}) =
    (ccall((:sive_rng_normals, libsive), Cvoid, (Ref{Rng}, Ptr{Float64}, Csize_t),
           g, out, length(out)); out)

mutable struct Probe
    ptr::Ptr{Cvoid}
end

"""Probe(dim; options...) e.g. Probe(8; t=1e4, steps=4000)."""
function Probe(dim::Integer; options...)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    rc = ccall((:sive_probe_new, libsive), Cint, (Ptr{Ptr{Cvoid}}, Csize_t), out, dim)
    rc == 0 || throw(SiveError(rc, last_errmsg()))
    p = finalizer(close, Probe(out[]))
    for (name, value) in options
        setoption!(p, OPTIONS[name], value)
    end
    return p
end

function Base.close(p::Probe)
    p.ptr == C_NULL || ccall((:sive_probe_free, libsive), Cvoid, (Ptr{Cvoid},), p.ptr)
    p.ptr = C_NULL
    return nothing
end

errmsg(p::Probe) = unsafe_string(ccall((:sive_probe_errmsg, libsive), Cstring, (Ptr{Cvoid},), p.ptr))
check(p::Probe, rc) = rc == 0 || throw(SiveError(rc, errmsg(p)))

function setoption!(p::Probe, opt::Integer, value)
    rc = if opt in DOUBLE_OPTIONS
        ccall((:sive_probe_set_double, libsive), Cint, (Ptr{Cvoid}, Cint, Cdouble), p.ptr, opt, value)
    else
        ccall((:sive_probe_set_int, libsive), Cint, (Ptr{Cvoid}, Cint, Int64), p.ptr, opt, value)
    end
    check(p, rc)
    return p
end

# The callbacks of one run, reached from C through the `user` pointer.
mutable struct Context
    grad!::Any
    eval!::Any
    err::Any            # first exception a callback threw, or nothing
end

# Trampolines: plain functions (no closures, so @cfunction works everywhere).
# A Julia exception must not unwind through C: store it and return non-zero,
# which makes the library stop every chain with SIVE_E_CALLBACK.
function grad_trampoline(theta::Ptr{Float64}, d::Csize_t, b::Ptr{Batch}, grad::Ptr{Float64},
                         loss::Ptr{Float64}, user::Ptr{Cvoid})::Cint
    ctx = unsafe_pointer_to_objref(user)::Context
    try
        l = ctx.grad!(unsafe_wrap(Array, grad, Int(d)), unsafe_wrap(Array, theta, Int(d)),
                      unsafe_load(b))
        unsafe_store!(loss, l)
        return 0
    catch e
        ctx.err === nothing && (ctx.err = e)
        return 1
    end
end

function eval_trampoline(theta::Ptr{Float64}, d::Csize_t, b::Ptr{Batch},
                         group_loss::Ptr{Float64}, user::Ptr{Cvoid})::Cint
    ctx = unsafe_pointer_to_objref(user)::Context
    try
        batch = unsafe_load(b)
        ctx.eval!(unsafe_wrap(Array, group_loss, Int(batch.n_groups)),
                  unsafe_wrap(Array, theta, Int(d)), batch)
        return 0
    catch e
        ctx.err === nothing && (ctx.err = e)
        return 1
    end
end

mutable struct Result
    ptr::Ptr{Cvoid}
end
function Base.close(r::Result)
    r.ptr == C_NULL || ccall((:sive_result_free, libsive), Cvoid, (Ptr{Cvoid},), r.ptr)
    r.ptr = C_NULL
    return nothing
end

"""
    run(p, theta_star, grad!, eval!) -> Result

grad!(g, theta, batch) writes the gradient of the batch's mean loss into g and
returns that loss (NaN if unknown); eval!(losses, theta, batch) writes the
batch.n_groups group losses.  theta is only valid during the call.  Keep the
probe's threads option at 1: the callbacks run on the library's threads
otherwise, which Julia before 1.9 cannot do.  A callback's exception is
rethrown here once the library has returned.
"""
function run(p::Probe, theta_star::Vector{Float64}, grad!, eval!)
    ctx = Context(grad!, eval!, nothing)
    gp = @cfunction(grad_trampoline, Cint,
                    (Ptr{Float64}, Csize_t, Ptr{Batch}, Ptr{Float64}, Ptr{Float64}, Ptr{Cvoid}))
    ep = @cfunction(eval_trampoline, Cint,
                    (Ptr{Float64}, Csize_t, Ptr{Batch}, Ptr{Float64}, Ptr{Cvoid}))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    rc = GC.@preserve ctx theta_star begin
        check(p, ccall((:sive_probe_set_callbacks_f64, libsive), Cint,
                       (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}),
                       p.ptr, gp, ep, pointer_from_objref(ctx)))
        ccall((:sive_probe_run_f64, libsive), Cint, (Ptr{Cvoid}, Ptr{Float64}, Ptr{Ptr{Cvoid}}),
              p.ptr, theta_star, out)
    end
    r = out[] == C_NULL ? nothing : finalizer(close, Result(out[]))
    if ctx.err !== nothing || rc != 0
        r === nothing || close(r)
        ctx.err === nothing || throw(ctx.err)
        throw(SiveError(rc, errmsg(p)))
    end
    return r
end

# ccall needs the symbol as a constant: generate one method per getter.
for (f, sym) in ((:lambda, :sive_result_lambda), (:mcse, :sive_result_mcse),
                 (:ess, :sive_result_ess), (:noise_correction, :sive_result_noise_correction),
                 (:noise_correction_std, :sive_result_noise_correction_std))
    @eval $f(r::Result) = ccall(($(QuoteNode(sym)), libsive), Cdouble, (Ptr{Cvoid},), r.ptr)
end
chains_ok(r::Result) = ccall((:sive_result_chains_ok, libsive), Int32, (Ptr{Cvoid},), r.ptr)
stat(r::Result, s::Integer, chain::Integer=SUMMARY) =
    ccall((:sive_result_stat, libsive), Cdouble, (Ptr{Cvoid}, Cint, Int32), r.ptr, s, chain)
health(r::Result) = unsafe_string(ccall((:sive_result_health, libsive), Cstring, (Ptr{Cvoid},), r.ptr))

end # module
