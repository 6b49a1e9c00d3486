/* Options as data: one table gives each option's name, type, bounds,
 * default and description.  The setters, getters, sive_option_info_get(),
 * the CLI's flags and the bindings' option lists all read it. */
#include "probe_impl.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SIVE_EXPERIMENTAL
#include "sive/experimental.h"

#define I(id_, name_, lo_, hi_, def_, doc_)                                  \
    {.id = id_, .name = name_, .type = SIVE_TYPE_INT, .int_lo = lo_,         \
     .int_hi = hi_, .int_default = def_, .doc = doc_}
#define D(id_, name_, lo_, hi_, lo_open_, hi_open_, def_, doc_)              \
    {.id = id_, .name = name_, .type = SIVE_TYPE_DOUBLE, .double_lo = lo_,   \
     .double_hi = hi_, .lo_open = lo_open_, .hi_open = hi_open_,            \
     .double_default = def_, .doc = doc_}

/* A double row of the experimental tier (ids from 1000 up). */
#define DX(id_, name_, lo_, hi_, lo_open_, hi_open_, def_, doc_)             \
    {.id = id_, .name = name_, .type = SIVE_TYPE_DOUBLE, .double_lo = lo_,   \
     .double_hi = hi_, .lo_open = lo_open_, .hi_open = hi_open_,            \
     .double_default = def_, .doc = doc_, .tier = SIVE_TIER_EXPERIMENTAL}

/* Defaults: the paper's deep-network operating point (docs/guide.md §3).
 * Rows in ascending id (result files write them in this order).  An
 * experimental option (docs/abi.md, "Experimental tier") takes an id from
 * 1000 up, .tier = SIVE_TIER_EXPERIMENTAL in its row, and its name in
 * sive/experimental.h; it keeps the id when it becomes stable. */
static const sive_option_info table[] = {
    D(SIVE_OPT_T, "t", 0.0, 1e12, 1, 0, 1e4,
      "inverse temperature t = n*beta"),
    D(SIVE_OPT_BASE_LR, "base_lr", 0.0, 1.0, 1, 0, 0.05,
      "base step a = eta*t (eta = a/t)"),
    D(SIVE_OPT_H, "h", 0.0, 1e12, 1, 0, NAN,
      "absolute localisation radius h (setting it selects absolute mode)"),
    D(SIVE_OPT_C_H, "c_h", 0.0, 1e12, 0, 0, 1.0,
      "adaptive radius h = c_h*||theta*||/sqrt(d) (the default mode; unset, 'auto' where "
      "metropolis 'auto' resolves to 1); 0 or 'auto': h chosen from the loss by pilot runs"),
    I(SIVE_OPT_STEPS, "steps", 2, INT64_C(1) << 40, 100000,
      "Langevin steps M per chain"),
    D(SIVE_OPT_BURN_IN, "burn_in", 0.0, 1.0, 0, 1, 0.3,
      "burn-in fraction alpha: the tail is m >= floor(alpha*M)"),
    I(SIVE_OPT_GROUPS, "groups", 2, INT64_C(1) << 20, 512,
      "evaluation groups N per evaluated step"),
    I(SIVE_OPT_EVAL_BATCH, "eval_batch", 1, INT64_C(1) << 24, 64,
      "evaluation batch size B_eval (examples per group)"),
    I(SIVE_OPT_GRAD_BATCH, "grad_batch", 1, INT64_C(1) << 24, 1024,
      "gradient batch size B_grad"),
    I(SIVE_OPT_CHAINS, "chains", 1, 4096, 5, "independent chains"),
    I(SIVE_OPT_THREADS, "threads", 1, 1024, 1,
      "worker threads running chains in parallel (results do not depend on it)"),
    I(SIVE_OPT_SEED, "seed", INT64_MIN, INT64_MAX, 0,
      "seed of every random stream (any 64-bit value)"),
    I(SIVE_OPT_REPLACEMENT, "replacement", 0, 1, 1,
      "1: indices drawn with replacement; 0: distinct within a batch"),
    I(SIVE_OPT_EVAL_STRIDE, "eval_stride", 1, INT64_C(1) << 20, 1,
      "evaluate every k-th step (m % k == 0)"),
    D(SIVE_OPT_ANCHOR, "anchor", -INFINITY, INFINITY, 1, 1, NAN,
      "loss anchor of the anchored mean estimator (NaN: none)"),
    I(SIVE_OPT_CHAIN_BEGIN, "chain_begin", 0, 4095, 0,
      "first chain of this run's range [chain_begin, chain_end)"),
    I(SIVE_OPT_CHAIN_END, "chain_end", 0, 4096, 0,
      "one past the last chain of this run's range (0: chains)"),
    I(SIVE_OPT_CONTROL_VARIATE, "control_variate", 0, 1, 0,
      "1: evaluate loss differences to theta* (per-example models; same target, less noise)"),
    I(SIVE_OPT_STEP_EXTRAPOLATE, "step_extrapolate", 0, 1, 0,
      "1: also run every chain at base_lr/2 and report lambda-hat extrapolated to step 0 "
      "(sive_step0; twice the work)"),
    I(SIVE_OPT_GRAD_CONTROL_VARIATE, "grad_control_variate", 0, 1, 0,
      "1: step with grad l_B(theta) - grad l_B(theta*) + grad L_n(theta*) (data models; "
      "near the full-batch chain at small B_grad, twice the gradient cost)"),
    I(SIVE_OPT_PRECONDITION, "precondition", 0, 1, 0,
      "1: diagonal RMSProp-style preconditioner, estimated in the first half of the "
      "burn-in, then frozen (same target)"),
    I(SIVE_OPT_METROPOLIS, "metropolis", -1, 1, -1,
      "1: Metropolis-adjusted Langevin steps, step adapted in the burn-in (exact loss: "
      "analytic or full-batch models; no step bias); 0: ULA; -1 or 'auto' (default): 1 with "
      "c_h auto when the loss is exact and no h/c_h is set, else 0"),
    I(SIVE_OPT_GRAD_NOISE_COMPENSATION, "grad_noise_compensation", 0, INT64_C(1) << 24, 0,
      "K >= 2: with grad_control_variate, estimate the gradient noise's variance per "
      "coordinate from K sub-batches and inject that much less Langevin noise (0: off)"),
    I(SIVE_OPT_GRAD_NOISE_FULL, "grad_noise_full", 0, 1, 0,
      "1: grad_noise_compensation subtracts the sub-batches' whole (rank K-1) covariance, "
      "not only its diagonal"),
    I(SIVE_OPT_GRAD_EXTRAPOLATE, "grad_extrapolate", 0, 1, 0,
      "1: also run every chain at 2 grad_batch and report lambda-hat extrapolated to the "
      "full batch (sive_full_batch; more than twice the gradient work)"),
    /* experimental tier (docs/abi.md) */
    {.id = SIVE_OPT_LEAPFROG, .name = "leapfrog", .type = SIVE_TYPE_INT, .int_lo = 1,
     .int_hi = 1024, .int_default = 1, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "K >= 2: with metropolis, Hamiltonian Monte Carlo steps of 1 .. 2K-1 leapfrog "
            "moves (mean K gradients per step, step adapted in the burn-in; 1: the Langevin "
            "proposal)"},
    DX(SIVE_OPT_ANNEAL, "anneal", 1.0, 1e12, 0, 0, 1.0,
       "kappa > 1: the even chains start hot, at t/kappa for the burn-in's first quarter, "
       "t rising back over its second; the odd chains start cold, and the two are compared "
       "(start_dependent flag; 1: off)"),
    {.id = SIVE_OPT_AUTO_STEP, .name = "auto_step", .type = SIVE_TYPE_INT, .int_lo = 0,
     .int_hi = 30, .int_default = 0, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "S >= 1: with metropolis, each move's step chosen locally and reversibly among "
            "the adapted step times 2^j, |j| <= S (autoMALA/AutoStep; 0: off)"},
    {.id = SIVE_OPT_DELAYED_REJECTION, .name = "delayed_rejection", .type = SIVE_TYPE_INT,
     .int_lo = 0, .int_hi = 64, .int_default = 0, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "k >= 2: with leapfrog >= 2, a rejected Hamiltonian step tries again from the "
            "same state and momentum with step eps/k and k times the moves, accepted with "
            "the delayed-rejection ratio (0, 1: off)"},
    {.id = SIVE_OPT_REPLICAS, .name = "replicas", .type = SIVE_TYPE_INT, .int_lo = 1,
     .int_hi = 64, .int_default = 1, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "R >= 2: with metropolis, replica exchange: each chain also runs R-1 replicas at "
            "t/q^k (k = 1 .. R-1, q = replica_ratio), swapped with their neighbours every "
            "step; only t feeds the estimators (R gradients per step; 1: off)"},
    DX(SIVE_OPT_REPLICA_RATIO, "replica_ratio", 1.0, 1e6, 1, 0, 1.5,
       "q > 1: the ratio of t between neighbouring replicas (replicas >= 2)"),
    {.id = SIVE_OPT_ORBIT_EVERY, .name = "orbit_every", .type = SIVE_TYPE_INT, .int_lo = 0,
     .int_hi = 1 << 20, .int_default = 0, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "k >= 1: with metropolis and a model that supplies a move, an exact "
            "Metropolis-Hastings move along the loss's symmetry orbits after every k-th "
            "step (one gradient call each; 0: off)"},
    DX(SIVE_OPT_ORBIT_SCALE, "orbit_scale", 0.0, 100.0, 1, 0, 0.1,
       "the orbit moves' initial size, adapted in the burn-in (orbit_every >= 1)"),
    {.id = SIVE_OPT_PRECONDITION_RANK, .name = "precondition_rank", .type = SIVE_TYPE_INT,
     .int_lo = 0, .int_hi = 64, .int_default = 0, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "K >= 1: with metropolis, a constant low-rank dense preconditioner: the top K "
            "Hessian eigenpairs at theta* (from gradient differences) shrink the proposal "
            "along the stiff directions (0: off)"},
    DX(SIVE_OPT_PRECONDITION_STIFF, "precondition_stiff", 1.0, 1e12, 0, 0, 1.0,
       "tau >= 1: precondition_rank shrinks the directions whose curvature exceeds tau times "
       "the first one it keeps, down to tau times it"),
    {.id = SIVE_OPT_PRECONDITION_UPDATE, .name = "precondition_update", .type = SIVE_TYPE_INT,
     .int_lo = 0, .int_hi = 1, .int_default = 0, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "1: precondition_rank estimates each chain's eigenpairs at its state at the end "
            "of the burn-in's first half (P = I before, constant after), not at theta*"},
    {.id = SIVE_OPT_KRON_EVERY, .name = "kron_every", .type = SIVE_TYPE_INT, .int_lo = -1,
     .int_hi = 1 << 20, .int_default = -1, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "k >= 1: with metropolis and a model that supplies blocks and their Kronecker "
            "curvature, an exact Metropolis-Hastings layer-block Newton move of one block "
            "after every k-th step (one gradient call each; 0: off); -1 or 'auto' (default): "
            "1 where metropolis 'auto' resolves to 1 and the model supplies the move, else 0"},
    DX(SIVE_OPT_KRON_STEP, "kron_step", 0.0, 1.0, 1, 0, 1.0,
       "s in (0, 1]: the layer-block Newton move's step (1: an exact draw when the block's "
       "conditional is Gaussian and the curvature exact; kron_every >= 1)"),
    {.id = SIVE_OPT_RADIUS_LOOKAHEAD, .name = "radius_lookahead", .type = SIVE_TYPE_INT,
     .int_lo = -1, .int_hi = 8, .int_default = -1, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "K >= 1: with metropolis and c_h = auto, the radius search keeps a plateau only "
            "after K more doublings of h stay within it, and takes its largest healthy level "
            "(0: one pilot past the plateau); -1 or 'auto' (default): 8 where metropolis "
            "'auto' resolves to 1, else 0"},
    {.id = SIVE_OPT_RADIUS_CHECK, .name = "radius_check", .type = SIVE_TYPE_INT,
     .int_lo = -1, .int_hi = 1, .int_default = -1, .tier = SIVE_TIER_EXPERIMENTAL,
     .doc = "1: after a run at a fixed radius, short paired pilots at h, 2h and 4h; "
            "radius_bound when lambda-hat rises beyond 4 % (and 2 standard errors) at a "
            "larger radius (0: off); -1 or 'auto' (default): 1 where metropolis is 1 and h "
            "or c_h (not auto) is set, else 0"},
};
#undef I
#undef D
#undef DX

#define N_OPTS (sizeof table / sizeof table[0])

const sive_option_info *sive_option_at(size_t i)
{
    return i < N_OPTS ? &table[i] : NULL;
}

const sive_option_info *sive_option_info_get(sive_option opt)
{
    for (size_t i = 0; i < N_OPTS; i++)
        if (table[i].id == opt)
            return &table[i];
    return NULL;
}

int sive_option_by_name(const char *name, sive_option *out)
{
    if (!name || !out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_option_by_name: NULL argument");
    for (size_t i = 0; i < N_OPTS; i++)
        if (strcmp(table[i].name, name) == 0) {
            *out = table[i].id;
            return SIVE_OK;
        }
    return sivei_fail(NULL, SIVE_E_INVALID_ARG, "unknown option '%s'", name);
}

void sivei_options_default(sivei_options *o)
{
    memset(o, 0, sizeof *o);
    o->anchor = NAN;
    o->h = NAN;
    for (size_t i = 0; i < N_OPTS; i++) {
        const sive_option_info *in = &table[i];
        if (in->type == SIVE_TYPE_INT) {
            int64_t v = in->int_default;
            switch ((int)in->id) {
            case SIVE_OPT_STEPS: o->steps = v; break;
            case SIVE_OPT_GROUPS: o->groups = v; break;
            case SIVE_OPT_EVAL_BATCH: o->eval_batch = v; break;
            case SIVE_OPT_GRAD_BATCH: o->grad_batch = v; break;
            case SIVE_OPT_CHAINS: o->chains = v; break;
            case SIVE_OPT_THREADS: o->threads = v; break;
            case SIVE_OPT_SEED: o->seed = (uint64_t)v; break;
            case SIVE_OPT_REPLACEMENT: o->replacement = v; break;
            case SIVE_OPT_EVAL_STRIDE: o->eval_stride = v; break;
            case SIVE_OPT_CHAIN_BEGIN: o->chain_begin = v; break;
            case SIVE_OPT_CHAIN_END: o->chain_end = v; break;
            case SIVE_OPT_CONTROL_VARIATE: o->control_variate = v; break;
            case SIVE_OPT_STEP_EXTRAPOLATE: o->step_extrapolate = v; break;
            case SIVE_OPT_GRAD_CONTROL_VARIATE: o->grad_control_variate = v; break;
            case SIVE_OPT_PRECONDITION: o->precondition = v; break;
            case SIVE_OPT_METROPOLIS: o->metropolis = v; break;
            case SIVE_OPT_GRAD_NOISE_COMPENSATION: o->grad_noise_compensation = v; break;
            case SIVE_OPT_GRAD_NOISE_FULL: o->grad_noise_full = v; break;
            case SIVE_OPT_GRAD_EXTRAPOLATE: o->grad_extrapolate = v; break;
            case SIVE_OPT_LEAPFROG: o->leapfrog = v; break;
            case SIVE_OPT_DELAYED_REJECTION: o->delayed_rejection = v; break;
            case SIVE_OPT_AUTO_STEP: o->auto_step = v; break;
            case SIVE_OPT_REPLICAS: o->replicas = v; break;
            case SIVE_OPT_ORBIT_EVERY: o->orbit_every = v; break;
            case SIVE_OPT_KRON_EVERY: o->kron_every = v; break;
            case SIVE_OPT_PRECONDITION_RANK: o->precondition_rank = v; break;
            case SIVE_OPT_PRECONDITION_UPDATE: o->precondition_update = v; break;
            case SIVE_OPT_RADIUS_LOOKAHEAD: o->radius_lookahead = v; break;
            case SIVE_OPT_RADIUS_CHECK: o->radius_check = v; break;
            default: break;
            }
        } else {
            double v = in->double_default;
            switch ((int)in->id) {
            case SIVE_OPT_T: o->t = v; break;
            case SIVE_OPT_BASE_LR: o->base_lr = v; break;
            case SIVE_OPT_C_H: o->c_h = v; break;
            case SIVE_OPT_BURN_IN: o->burn_in = v; break;
            case SIVE_OPT_ANNEAL: o->anneal = v; break;
            case SIVE_OPT_REPLICA_RATIO: o->replica_ratio = v; break;
            case SIVE_OPT_ORBIT_SCALE: o->orbit_scale = v; break;
            case SIVE_OPT_KRON_STEP: o->kron_step = v; break;
            case SIVE_OPT_PRECONDITION_STIFF: o->precondition_stiff = v; break;
            default: break; /* h, anchor: no default (NaN) */
            }
        }
    }
}

/* The option's info, checked against the type the caller uses. */
static const sive_option_info *lookup(sive_option opt, sive_option_type type,
                                      char *errbuf)
{
    const sive_option_info *in = sive_option_info_get(opt);
    if (!in) {
        sivei_fail(errbuf, SIVE_E_INVALID_ARG, "unknown option %d", (int)opt);
        return NULL;
    }
    if (in->type != type) {
        const char *t = in->type == SIVE_TYPE_INT ? "int" : "double";
        sivei_fail(errbuf, SIVE_E_INVALID_ARG,
                  "option '%s' is %s-typed: use the _%s setter/getter",
                  in->name, t, t);
        return NULL;
    }
    return in;
}

static void *field(sivei_options *o, sive_option opt)
{
    switch ((int)opt) {
    case SIVE_OPT_T: return &o->t;
    case SIVE_OPT_BASE_LR: return &o->base_lr;
    case SIVE_OPT_H: return &o->h;
    case SIVE_OPT_C_H: return &o->c_h;
    case SIVE_OPT_BURN_IN: return &o->burn_in;
    case SIVE_OPT_ANCHOR: return &o->anchor;
    case SIVE_OPT_STEPS: return &o->steps;
    case SIVE_OPT_GROUPS: return &o->groups;
    case SIVE_OPT_EVAL_BATCH: return &o->eval_batch;
    case SIVE_OPT_GRAD_BATCH: return &o->grad_batch;
    case SIVE_OPT_CHAINS: return &o->chains;
    case SIVE_OPT_THREADS: return &o->threads;
    case SIVE_OPT_SEED: return &o->seed;
    case SIVE_OPT_REPLACEMENT: return &o->replacement;
    case SIVE_OPT_EVAL_STRIDE: return &o->eval_stride;
    case SIVE_OPT_CHAIN_BEGIN: return &o->chain_begin;
    case SIVE_OPT_CHAIN_END: return &o->chain_end;
    case SIVE_OPT_CONTROL_VARIATE: return &o->control_variate;
    case SIVE_OPT_STEP_EXTRAPOLATE: return &o->step_extrapolate;
    case SIVE_OPT_GRAD_CONTROL_VARIATE: return &o->grad_control_variate;
    case SIVE_OPT_PRECONDITION: return &o->precondition;
    case SIVE_OPT_METROPOLIS: return &o->metropolis;
    case SIVE_OPT_GRAD_NOISE_COMPENSATION: return &o->grad_noise_compensation;
    case SIVE_OPT_GRAD_NOISE_FULL: return &o->grad_noise_full;
    case SIVE_OPT_GRAD_EXTRAPOLATE: return &o->grad_extrapolate;
    case SIVE_OPT_LEAPFROG: return &o->leapfrog;
    case SIVE_OPT_DELAYED_REJECTION: return &o->delayed_rejection;
    case SIVE_OPT_ANNEAL: return &o->anneal;
    case SIVE_OPT_AUTO_STEP: return &o->auto_step;
    case SIVE_OPT_REPLICAS: return &o->replicas;
    case SIVE_OPT_REPLICA_RATIO: return &o->replica_ratio;
    case SIVE_OPT_ORBIT_EVERY: return &o->orbit_every;
    case SIVE_OPT_ORBIT_SCALE: return &o->orbit_scale;
    case SIVE_OPT_PRECONDITION_RANK: return &o->precondition_rank;
    case SIVE_OPT_PRECONDITION_STIFF: return &o->precondition_stiff;
    case SIVE_OPT_PRECONDITION_UPDATE: return &o->precondition_update;
    case SIVE_OPT_KRON_EVERY: return &o->kron_every;
    case SIVE_OPT_KRON_STEP: return &o->kron_step;
    case SIVE_OPT_RADIUS_LOOKAHEAD: return &o->radius_lookahead;
    case SIVE_OPT_RADIUS_CHECK: return &o->radius_check;
    }
    return NULL;
}

int sivei_options_get(const sivei_options *o, sive_option opt,
                      sive_option_type type, int64_t *iv, double *dv,
                      char *errbuf)
{
    if (!lookup(opt, type, errbuf))
        return SIVE_E_INVALID_ARG;
    const void *f = field((sivei_options *)o, opt);
    if (type == SIVE_TYPE_INT) {
        memcpy(iv, f, sizeof *iv); /* seed is uint64_t: same bits */
        return SIVE_OK;
    }
    *dv = *(const double *)f;
    /* only the radius mode in use has a value */
    if ((opt == SIVE_OPT_H && !o->h_absolute) || (opt == SIVE_OPT_C_H && o->h_absolute))
        *dv = NAN;
    return SIVE_OK;
}

int sivei_options_put(sivei_options *o, sive_option opt, int64_t iv, double dv)
{
    const sive_option_info *in = sive_option_info_get(opt);
    if (!in)
        return SIVE_E_INVALID_ARG;
    if (in->type == SIVE_TYPE_INT)
        memcpy(field(o, opt), &iv, sizeof iv); /* seed is uint64_t: same bits */
    else
        *(double *)field(o, opt) = dv;
    return SIVE_OK;
}

int sive_probe_set_int(sive_probe *p, sive_option opt, int64_t value)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    const sive_option_info *in = lookup(opt, SIVE_TYPE_INT, p->errmsg);
    if (!in)
        return SIVE_E_INVALID_ARG;
    /* compared as integers: a double comparison would accept 2^62+1 */
    if (value < in->int_lo || value > in->int_hi)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "option '%s' = %lld is outside [%lld, %lld]", in->name,
                         (long long)value, (long long)in->int_lo,
                         (long long)in->int_hi);
    memcpy(field(&p->opt, opt), &value, sizeof value);
    return SIVE_OK;
}

int sive_probe_set_double(sive_probe *p, sive_option opt, double value)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    const sive_option_info *in = lookup(opt, SIVE_TYPE_DOUBLE, p->errmsg);
    if (!in)
        return SIVE_E_INVALID_ARG;
    int nan_ok = opt == SIVE_OPT_ANCHOR && isnan(value); /* NaN clears it */
    int lo_ok = in->lo_open ? value > in->double_lo : value >= in->double_lo;
    int hi_ok = in->hi_open ? value < in->double_hi : value <= in->double_hi;
    if (!nan_ok && !(lo_ok && hi_ok))
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "option '%s' = %g is outside %c%g, %g%c", in->name,
                         value, in->lo_open ? '(' : '[', in->double_lo,
                         in->double_hi, in->hi_open ? ')' : ']');
    *(double *)field(&p->opt, opt) = value;
    if (opt == SIVE_OPT_H || opt == SIVE_OPT_C_H) {
        p->opt.h_absolute = opt == SIVE_OPT_H;
        p->opt.radius_set = 1; /* metropolis -1 then resolves to 0 */
    }
    return SIVE_OK;
}

int sive_probe_get_int(const sive_probe *p, sive_option opt, int64_t *value)
{
    if (!p || !value)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_probe_get_int: NULL argument");
    return sivei_options_get(&p->opt, opt, SIVE_TYPE_INT, value, NULL,
                             (char *)p->errmsg);
}

int sive_probe_get_double(const sive_probe *p, sive_option opt, double *value)
{
    if (!p || !value)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_probe_get_double: NULL argument");
    return sivei_options_get(&p->opt, opt, SIVE_TYPE_DOUBLE, NULL, value,
                             (char *)p->errmsg);
}

/* The one number grammar of the text setter, for every numeric type and
 * independent of the locale (no whitespace, no hex, '.' as the point):
 *   [+-] D+ [. D*] [(e|E) [+-] D+]   or   [+-] . D+ [(e|E) [+-] D+]
 * Returns 1 for the integer form (sign and digits only), 2 for any other
 * form of the grammar, 0 for text outside it. */
static int number_form(const char *s)
{
    const char *c = s + (*s == '-' || *s == '+');
    size_t lead = strspn(c, "0123456789"), frac = 0;
    c += lead;
    int form = 1;
    if (*c == '.') {
        frac = strspn(++c, "0123456789");
        c += frac;
        form = 2;
    }
    if (lead + frac == 0)
        return 0;
    if (*c == 'e' || *c == 'E') {
        c += 1 + (c[1] == '-' || c[1] == '+');
        size_t exp = strspn(c, "0123456789");
        if (exp == 0)
            return 0;
        c += exp;
        form = 2;
    }
    return *c ? 0 : form;
}

/* Text of the integer form to int64 (strtoll reads it the same in every
 * locale); -1 when it does not fit. */
static int parse_int(const char *s, int64_t *out)
{
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* The seed is a uint64_t: a whole number above INT64_MAX up to 2^64 - 1
 * (no minus sign: strtoull would negate) is its bits, as a negative int64
 * is; -1 when it does not fit. */
static int parse_seed(const char *s, int64_t *out)
{
    if (*s == '-')
        return -1;
    errno = 0;
    const uint64_t u = strtoull(s, NULL, 10);
    if (errno == ERANGE)
        return -1;
    memcpy(out, &u, sizeof *out);
    return 0;
}

/* Text of the grammar to a double, read in the "C" locale whatever the
 * thread's (a host that called setlocale() would otherwise have "0,5"
 * accepted and "0.5" refused).  -1 on ERANGE (*out: the value strtod
 * gives, +-HUGE_VAL on overflow), -2 without a locale. */
static int parse_double(const char *s, double *out)
{
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (c == (locale_t)0)
        return -2;
    locale_t old = uselocale(c);
    errno = 0;
    double v = strtod(s, NULL);
    int e = errno;
    uselocale(old);
    freelocale(c);
    *out = v;
    return e == ERANGE ? -1 : 0;
}

int sive_probe_set_text(sive_probe *p, const char *name, const char *value)
{
    if (!p || !name || !value)
        return sivei_fail(p ? p->errmsg : NULL, SIVE_E_INVALID_ARG,
                         "sive_probe_set_text: NULL argument");
    sive_option opt;
    if (sive_option_by_name(name, &opt))
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG, "unknown option '%s'", name);
    const int form = number_form(value);
    if ((opt == SIVE_OPT_METROPOLIS || opt == SIVE_OPT_KRON_EVERY ||
         opt == SIVE_OPT_RADIUS_LOOKAHEAD || opt == SIVE_OPT_RADIUS_CHECK) &&
        strcasecmp(value, "auto") == 0)
        return sive_probe_set_int(p, opt, -1);
    const sive_option_info *in = sive_option_info_get(opt);
    if (in->type == SIVE_TYPE_INT) {
        int64_t v;
        if (form != 1)
            return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                             "option '%s' takes a whole number, not '%s'", name, value);
        if (opt == SIVE_OPT_SEED && parse_int(value, &v) && parse_seed(value, &v))
            return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                             "option 'seed' = %s is outside [%lld, %llu] (any 64-bit value)",
                             value, (long long)INT64_MIN, (unsigned long long)UINT64_MAX);
        if (opt != SIVE_OPT_SEED && parse_int(value, &v)) /* a whole number beyond 64 bits */
            return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                             "option '%s' = %s is outside [%lld, %lld]", name, value,
                             (long long)in->int_lo, (long long)in->int_hi);
        return sive_probe_set_int(p, opt, v);
    }
    double v = NAN;
    if (opt == SIVE_OPT_ANCHOR && strcasecmp(value, "nan") == 0)
        return sive_probe_set_double(p, opt, v);
    if (opt == SIVE_OPT_C_H && strcasecmp(value, "auto") == 0)
        return sive_probe_set_double(p, opt, 0.0);
    if (!form)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "option '%s' takes a number, not '%s'", name, value);
    const int prc = parse_double(value, &v);
    if (prc == -1)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "option '%s' = %s %s a double", name, value,
                         isinf(v) ? "overflows" : "underflows");
    if (prc)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "option '%s': '%s' cannot be read: no \"C\" locale (out of memory?)",
                         name, value);
    return sive_probe_set_double(p, opt, v);
}
