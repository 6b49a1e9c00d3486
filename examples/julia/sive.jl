# A minimal ccall client of libsive 0.2: models as sive_model values with
# Julia callbacks (Float32 or Float64), a probe whose options are set by name
# from the library's own option table, the result's status and main numbers,
# and the library's RNG for a model's own noise.
# Untested here (Julia is not packaged in Debian 12): see README.md.
#
# The library is $SIVE_LIBRARY when set, else "libsive" on the loader path.
module Sive

# run and stat are not exported: they would clash with Base.run and Base.stat.
export Model, Probe, SiveError, setoption!, getoption, options, lambda, mcse, ess, health,
       noise_correction, noise_correction_std, chains_ok, status, errmsg, stats, Rng, normals!

const libsive = get(ENV, "SIVE_LIBRARY", "libsive")

const OK, E_INVALID_ARG = 0, -1
const F32, F64 = Cint(1), Cint(2)            # sive_dtype
const TYPE_INT, TYPE_DOUBLE = Cint(1), Cint(2)  # sive_option_type
const SUMMARY = Int32(-1)

# Statistics (sive_stat) used by name below; stats(r) lists them all.
const STAT_SIVE, STAT_SIVE_UNCLIPPED, STAT_RAW_VARIANCE = 0, 1, 2

# Layout of sive_batch.
struct Batch
    index::Ptr{UInt64}   # C_NULL for analytic models (n_examples 0)
    n_groups::Csize_t
    group_size::Csize_t
    seed::UInt64
    chain::Int32
    worker::Int32
    step::Int64
end

# Layout of sive_model: filled after sive_model_init, passed by reference.
struct CModel
    struct_size::UInt32
    dtype::Cint
    dim::Csize_t
    n_examples::UInt64
    grad::Ptr{Cvoid}
    loss::Ptr{Cvoid}
    group_loss::Ptr{Cvoid}
    user::Ptr{Cvoid}
    destroy::Ptr{Cvoid}
end

# Layout of sive_option_info (static storage in the library; read only
# through the pointer it returns).
struct COptionInfo
    id::Cint
    name::Ptr{UInt8}
    type::Cint
    lo_open::Cint
    hi_open::Cint
    int_lo::Int64
    int_hi::Int64
    int_default::Int64
    double_lo::Cdouble
    double_hi::Cdouble
    double_default::Cdouble
    doc::Ptr{UInt8}
end

cstr(p) = p == C_NULL ? "" : unsafe_string(p)
strerror(rc) = cstr(ccall((:sive_strerror, libsive), Ptr{UInt8}, (Cint,), rc))
last_errmsg() = cstr(ccall((:sive_last_errmsg, libsive), Ptr{UInt8}, ()))
version() = cstr(ccall((:sive_version_string, libsive), Ptr{UInt8}, ()))
set_errmsg(msg::AbstractString) =
    ccall((:sive_set_errmsg, libsive), Cvoid, (Cstring,), replace(msg, '\0' => ' '))

struct SiveError <: Exception
    status::Cint
    message::String
end
Base.showerror(io::IO, e::SiveError) =
    print(io, "libsive: ", strerror(e.status), isempty(e.message) ? "" : ": " * e.message)

# ---------------------------------------------------------------------------
# Options, read from the library
# ---------------------------------------------------------------------------

"""One option as the library describes it; bounds and default have its type
(default NaN: none)."""
struct OptionInfo
    id::Cint
    name::Symbol
    isint::Bool
    lo::Real
    hi::Real
    lo_open::Bool
    hi_open::Bool
    default::Real
    doc::String
end

function OptionInfo(p::Ptr{COptionInfo})
    c = unsafe_load(p)
    isint = c.type == TYPE_INT
    pick(a, b) = isint ? a : b
    return OptionInfo(c.id, Symbol(cstr(c.name)), isint, pick(c.int_lo, c.double_lo),
                      pick(c.int_hi, c.double_hi), c.lo_open != 0, c.hi_open != 0,
                      pick(c.int_default, c.double_default), cstr(c.doc))
end

"""Every option the library has (sive_option_at until NULL)."""
function options()
    out = OptionInfo[]
    while true
        p = ccall((:sive_option_at, libsive), Ptr{COptionInfo}, (Csize_t,), length(out))
        p == C_NULL && return out
        push!(out, OptionInfo(p))
    end
end

"""The option called `name` (e.g. :base_lr)."""
function option(name)
    id = Ref{Cint}(0)
    rc = ccall((:sive_option_by_name, libsive), Cint, (Cstring, Ref{Cint}), string(name), id)
    rc == OK || throw(SiveError(rc, last_errmsg()))
    return OptionInfo(ccall((:sive_option_info_get, libsive), Ptr{COptionInfo}, (Cint,), id[]))
end

# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

"""
    Model(dim, grad; group_loss = nothing, loss = nothing, n_examples = 0, T = Float64)

grad(g, theta, batch) writes the gradient of the mean loss over the batch's
examples into g and returns that loss (NaN if unknown).  Then one of:
loss(losses, theta, batch) writes the loss of each of the batch.group_size
examples at batch.index (distinct, ascending; needs n_examples > 0: the
library forms the group means), or group_loss(losses, theta, batch) writes
the batch.n_groups group mean losses (analytic models).  Each writes into
its first argument, as a Julia `f!` would.  T (Float32 or Float64) is the
precision of theta and g.  The library checks the description when a run
starts.
"""
struct Model{T<:Union{Float32,Float64}}
    dim::Int
    n_examples::UInt64
    grad::Any
    loss::Any           # per-example losses, or nothing
    group_loss::Any     # per-group losses, or nothing
end
Model(dim::Integer, grad; group_loss = nothing, loss = nothing, n_examples::Integer = 0,
      T::Type = Float64) = Model{T}(dim, n_examples, grad, loss, group_loss)

# The callbacks of one run, reached from C through the `user` pointer.
mutable struct Context{T}
    model::Model{T}
    err::Any            # first exception a callback threw, or nothing
end

# A Julia exception must not unwind through C: keep the first one, hand its
# text to the library (the run's message then ends with it) and return
# non-zero, which makes the library stop every chain with SIVE_E_CALLBACK.
function failed(ctx::Context, e)::Cint
    ctx.err === nothing && (ctx.err = e)
    set_errmsg(first(sprint(showerror, e), 500))
    return 1
end

# Typed bodies, selected by dispatch on the context's T.
function call_grad(ctx::Context{T}, theta, d, b, grad, loss) where {T}
    n = Int(d)
    l = ctx.model.grad(unsafe_wrap(Array, Ptr{T}(grad), n),
                       unsafe_wrap(Array, Ptr{T}(theta), n), unsafe_load(b))
    unsafe_store!(loss, l)
end

function call_losses(ctx::Context{T}, f, per_example, theta, d, b, out) where {T}
    batch = unsafe_load(b)
    n = Int(per_example ? batch.group_size : batch.n_groups)
    f(unsafe_wrap(Array, out, n), unsafe_wrap(Array, Ptr{T}(theta), Int(d)), batch)
end

# Trampolines: plain functions (no closures, so @cfunction works everywhere);
# theta and grad arrive as void pointers of the model's dtype.
function grad_trampoline(theta::Ptr{Cvoid}, d::Csize_t, b::Ptr{Batch}, grad::Ptr{Cvoid},
                         loss::Ptr{Float64}, user::Ptr{Cvoid})::Cint
    ctx = unsafe_pointer_to_objref(user)::Context
    try
        call_grad(ctx, theta, d, b, grad, loss)
        return 0
    catch e
        return failed(ctx, e)
    end
end

function loss_trampoline(theta::Ptr{Cvoid}, d::Csize_t, b::Ptr{Batch}, out::Ptr{Float64},
                         user::Ptr{Cvoid})::Cint
    ctx = unsafe_pointer_to_objref(user)::Context
    try
        call_losses(ctx, ctx.model.loss, true, theta, d, b, out)
        return 0
    catch e
        return failed(ctx, e)
    end
end

function group_trampoline(theta::Ptr{Cvoid}, d::Csize_t, b::Ptr{Batch}, out::Ptr{Float64},
                          user::Ptr{Cvoid})::Cint
    ctx = unsafe_pointer_to_objref(user)::Context
    try
        call_losses(ctx, ctx.model.group_loss, false, theta, d, b, out)
        return 0
    catch e
        return failed(ctx, e)
    end
end

# The sive_model of one run (user points to ctx, which the caller preserves).
function cmodel(ctx::Context{T}) where {T}
    m = ctx.model
    init = Ref{CModel}()
    rc = ccall((:sive_model_init, libsive), Cint, (Ref{CModel}, Csize_t), init, sizeof(CModel))
    rc == OK || throw(SiveError(rc, last_errmsg()))
    gp = @cfunction(grad_trampoline, Cint,
                    (Ptr{Cvoid}, Csize_t, Ptr{Batch}, Ptr{Cvoid}, Ptr{Float64}, Ptr{Cvoid}))
    # The argument types must be literal: @cfunction needs them at compile time.
    lp = m.loss === nothing ? C_NULL :
        @cfunction(loss_trampoline, Cint,
                   (Ptr{Cvoid}, Csize_t, Ptr{Batch}, Ptr{Float64}, Ptr{Cvoid}))
    cp = m.group_loss === nothing ? C_NULL :
        @cfunction(group_trampoline, Cint,
                   (Ptr{Cvoid}, Csize_t, Ptr{Batch}, Ptr{Float64}, Ptr{Cvoid}))
    return Ref(CModel(init[].struct_size, T === Float32 ? F32 : F64, m.dim, m.n_examples,
                      gp, lp, cp, pointer_from_objref(ctx), C_NULL))
end

# ---------------------------------------------------------------------------
# Probe and results
# ---------------------------------------------------------------------------

mutable struct Probe
    ptr::Ptr{Cvoid}
end

"""Probe(; options...) e.g. Probe(t=1e4, steps=4000): options by name."""
function Probe(; options...)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    rc = ccall((:sive_probe_new, libsive), Cint, (Ptr{Ptr{Cvoid}},), out)
    rc == OK || throw(SiveError(rc, last_errmsg()))
    p = finalizer(close, Probe(out[]))
    for (name, value) in options
        setoption!(p, name, value)
    end
    return p
end

function Base.close(p::Probe)
    p.ptr == C_NULL || ccall((:sive_probe_free, libsive), Cvoid, (Ptr{Cvoid},), p.ptr)
    p.ptr = C_NULL
    return nothing
end

errmsg(p::Probe) = cstr(ccall((:sive_probe_errmsg, libsive), Ptr{UInt8}, (Ptr{Cvoid},), p.ptr))
check(p::Probe, rc) = rc == OK || throw(SiveError(rc, errmsg(p)))

"""Set an option by name: the library's table says its type; a string goes
through the library's strict text parser."""
function setoption!(p::Probe, name, value)
    rc = if value isa AbstractString
        ccall((:sive_probe_set_text, libsive), Cint, (Ptr{Cvoid}, Cstring, Cstring),
              p.ptr, string(name), value)
    else
        info = option(name)
        if info.isint
            ccall((:sive_probe_set_int, libsive), Cint, (Ptr{Cvoid}, Cint, Int64),
                  p.ptr, info.id, Int64(value))   # InexactError for 1.5
        else
            ccall((:sive_probe_set_double, libsive), Cint, (Ptr{Cvoid}, Cint, Cdouble),
                  p.ptr, info.id, value)
        end
    end
    check(p, rc)
    return p
end

"""An option's current value (Int64 or Float64; NaN for h in adaptive mode
and for an unset anchor)."""
function getoption(p::Probe, name)
    info = option(name)
    if info.isint
        v = Ref{Int64}(0)
        check(p, ccall((:sive_probe_get_int, libsive), Cint, (Ptr{Cvoid}, Cint, Ref{Int64}),
                       p.ptr, info.id, v))
    else
        v = Ref{Cdouble}(0)
        check(p, ccall((:sive_probe_get_double, libsive), Cint,
                       (Ptr{Cvoid}, Cint, Ref{Cdouble}), p.ptr, info.id, v))
    end
    return v[]
end

mutable struct Result
    ptr::Ptr{Cvoid}
end
function Base.close(r::Result)
    r.ptr == C_NULL || ccall((:sive_result_free, libsive), Cvoid, (Ptr{Cvoid},), r.ptr)
    r.ptr = C_NULL
    return nothing
end

status(r::Result) = ccall((:sive_result_status, libsive), Cint, (Ptr{Cvoid},), r.ptr)
errmsg(r::Result) = cstr(ccall((:sive_result_errmsg, libsive), Ptr{UInt8}, (Ptr{Cvoid},), r.ptr))

"""
    run(p, model, theta_star; check = true) -> Result

Probe `model` around theta_star (a Vector of the model's T; only read).
Throws SiveError when the library refuses the run; rethrows a callback's
exception; and with check, throws SiveError (the run's status and message)
when the run ended early.  Keep the probe's threads option at 1: the
callbacks run on the library's threads otherwise, which Julia before 1.9
cannot do.
"""
function run(p::Probe, model::Model{T}, theta_star::Vector{T}; check::Bool = true) where {T}
    length(theta_star) == model.dim ||
        throw(SiveError(E_INVALID_ARG, "theta_star has $(length(theta_star)) values, " *
                                       "the model $(model.dim)"))
    ctx = Context{T}(model, nothing)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    rc = GC.@preserve ctx theta_star begin
        m = cmodel(ctx)
        ccall((:sive_probe_run, libsive), Cint,
              (Ptr{Cvoid}, Ref{CModel}, Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), p.ptr, m, theta_star, out)
    end
    rc == OK || throw(SiveError(rc, errmsg(p)))   # no result: nothing ran
    r = finalizer(close, Result(out[]))
    if ctx.err !== nothing
        close(r)
        throw(ctx.err)
    end
    if check && status(r) != OK
        e = SiveError(status(r), errmsg(r))
        close(r)
        throw(e)
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
health(r::Result) = cstr(ccall((:sive_result_health, libsive), Ptr{UInt8}, (Ptr{Cvoid},), r.ptr))

"""Every statistic, keyed by the library's machine names (sive_stat_name),
as the sive tool's JSON output."""
function stats(r::Result, chain::Integer=SUMMARY)
    out = Dict{String,Float64}()
    for s in Iterators.countfrom(0)
        name = ccall((:sive_stat_name, libsive), Ptr{UInt8}, (Cint,), s)
        name == C_NULL && return out
        out[unsafe_string(name)] = stat(r, s, chain)
    end
end

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

end # module
