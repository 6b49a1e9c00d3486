/* Shared internals of the probe, the run, the chains and the result (not
 * installed).  Internal names start with sivei_ so that they cannot be
 * mistaken for the public sive_ API. */
#ifndef SIVE_PROBE_IMPL_H
#define SIVE_PROBE_IMPL_H

#include "internal.h"
#include "rng.h"
#include "stat_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Counts of the public enums (not part of the ABI: the public header has
 * no *_COUNT_ enumerators).  SIVEI_N_STATS counts stat_table.h's rows. */
#define SIVEI_N_TRACES 5

/* Independent random streams of a chain, one per purpose, so that changing
 * N (evaluation draws) leaves the Langevin path untouched. */
enum {
    SIVEI_STREAM_NOISE = 0,   /* Langevin normals                  */
    SIVEI_STREAM_GRAD_IDX = 1,/* gradient batch indices            */
    SIVEI_STREAM_EVAL_IDX = 2,/* evaluation batch indices          */
    SIVEI_STREAM_GRAD_CB = 3, /* seeds handed to the grad callback */
    SIVEI_STREAM_EVAL_CB = 4, /* seeds handed to the eval callback */
    SIVEI_STREAM_COUNT = 5
};

/* The option values (lib/core/options.c owns their table). */
typedef struct sivei_options {
    double t, base_lr, h, c_h, burn_in, anchor;
    int h_absolute;
    /* internal, not an option (never saved): 1 once h or c_h was set on
     * the probe; metropolis -1 (auto) then resolves to 0 (defaults.c) */
    int radius_set;
    int64_t steps, groups, eval_batch, grad_batch, chains, threads;
    int64_t replacement, eval_stride;
    int64_t chain_begin, chain_end; /* as set; chain_end 0 = chains */
    int64_t control_variate, grad_control_variate, precondition;
    int64_t step_extrapolate, metropolis;
    int64_t grad_noise_compensation; /* K sub-batches, 0: off */
    int64_t grad_noise_full;         /* 1: the covariance, not its diagonal */
    int64_t grad_extrapolate;        /* 1: also at 2 B_grad, Richardson      */
    int64_t leapfrog;                /* K >= 2: HMC with K leapfrog moves    */
    int64_t delayed_rejection;       /* k >= 2: HMC's second stage, eps/k    */
    uint64_t seed;
    /* auto_step (experimental option 1076): S >= 1, the locally adaptive
     * step of the metropolis moves, |j| <= S halvings or doublings
     * (sampler_autostep.c); 0: off */
    int64_t auto_step;
    /* internal, not an option (never saved): metropolis with this step for
     * every chain and no adaptation when > 0 (the radius search's pilots
     * share one step so their levels share proposals; radius_auto.c) */
    double mala_step;
    /* anneal (experimental option 1075): kappa >= 1 (anneal.c) */
    double anneal;
    /* replicas, replica_ratio (experimental options 1085, 1086): R >= 2
     * rungs at t/q^k in each chain, swapped (sampler_replica.c); R 1: off */
    int64_t replicas;
    double replica_ratio;
    /* orbit_every, orbit_scale (experimental options 1090, 1091): an orbit
     * move (sive_model.move) after every k-th metropolis step
     * (sampler_orbit.c); 0: off */
    int64_t orbit_every;
    double orbit_scale;
    /* kron_every, kron_step (experimental options 1100, 1101): a
     * layer-block Newton move from the model's Kronecker curvature
     * (sive_model.curvature) after every k-th metropolis step, through the
     * orbit moves' acceptance (sampler_kron.c); 0: off */
    int64_t kron_every;
    double kron_step;
    /* precondition_rank, _stiff, _update (experimental options 1095-1097):
     * the constant low-rank dense preconditioner of the metropolis step
     * (sampler_lowrank.c); rank 0: off */
    int64_t precondition_rank, precondition_update;
    double precondition_stiff;
    /* radius_lookahead (experimental option 1102): with metropolis and
     * c_h = 0, K >= 1 octaves a flat chord must stay flat before the
     * search keeps it (radius_auto.c); 0: the single jump pilot */
    int64_t radius_lookahead;
    /* radius_check (experimental option 1103): 1 runs paired pilots at h,
     * 2h and 4h after a run at a fixed radius (radius_check.c); 0 off;
     * -1 auto (defaults.c) */
    int64_t radius_check;
    /* internal, not an option (never saved): 1 runs every chain hot (the
     * radius search's pilots), 0 starts the odd chains cold */
    int anneal_all;
} sivei_options;

SIVE_HIDDEN void sivei_options_default(sivei_options *o);
/* Read an option of the given type from a set of values (getters of the
 * probe and of the result share it); errbuf may be NULL. */
SIVE_HIDDEN int sivei_options_get(const sivei_options *o, sive_option opt,
                                  sive_option_type type, int64_t *iv,
                                  double *dv, char *errbuf);
/* Store a value by id, unchecked (the result-file reader checks every
 * option against its bounds afterwards); SIVE_E_INVALID_ARG for an id the
 * table does not hold.  The radius mode (h_absolute) is left as it is. */
SIVE_HIDDEN int sivei_options_put(sivei_options *o, sive_option opt, int64_t iv,
                                  double dv);

/* An evaluation view (views.c): a model description whose loss or
 * group_loss measures Lbar on other data (user borrowed from the caller),
 * optionally restricted to a subset of its examples. */
#define SIVEI_VIEW_NAME 64
typedef struct sivei_view {
    char name[SIVEI_VIEW_NAME];
    sive_model model;
    uint64_t *subset; /* strictly ascending indices into model's examples */
    uint64_t n;       /* examples drawn from: the subset's or the model's */
} sivei_view;

/* sive_probe_set_radius_from(): the radius an earlier run chose from the
 * loss, with what it was chosen for (that run's options, model and
 * theta*) and its search's health line (NULL when its result had none). */
typedef struct sivei_reuse {
    int on;
    double h;
    sivei_options opt;
    int32_t dtype;
    uint64_t dim, n_examples, theta_hash, identity;
    uint64_t *ranges; /* the moved parameters' ranges (NULL: all) */
    size_t n_ranges;
    char *note;
} sivei_reuse;

struct sive_probe {
    sivei_options opt;
    sivei_reuse reuse;
    sivei_view *views; /* evaluation views (views.c) */
    size_t n_views;
    uint64_t *ranges; /* parameters the chains move (params.c), or NULL */
    size_t n_ranges;
    sive_progress_fn progress;
    void *progress_user;
    /* within one sive_probe_run(): the defaults found the loss exact, so
     * their exact call at theta* (sivei_grad_at_star) stored a finite loss
     * and the Metropolis sampler's check of it is not repeated in the
     * run's sivei_run_once() calls (prepare() copies it to the run) */
    int star_exact;
    char errmsg[SIVE_ERRMSG_LEN];
};

/* The tail window T = {m >= floor(alpha*M), m % stride == 0}: defined here
 * only.  First evaluated step of the tail, and the number of them. */
SIVE_HIDDEN int64_t sivei_tail_first(const sivei_options *o);
SIVE_HIDDEN int64_t sivei_tail_count(const sivei_options *o);

typedef struct sivei_chain_out {
    sive_chain_status status;
    int64_t stop_step; /* step where it diverged or stopped; M if finished */
    int64_t steps_run; /* length of the traces                           */
    double *trace[SIVEI_N_TRACES];
    double stat[SIVEI_N_STATS];
} sivei_chain_out;

struct sive_result {
    sivei_options opt;   /* frozen at the run's start */
    int32_t chains, chains_ok;
    int32_t begin, end;  /* chains computed: [begin, end); others NOT_RUN */
    int32_t dtype;       /* the model's, a hash of theta* and the model's */
    uint64_t dim, n_examples, theta_hash; /* identity (0: none): what     */
    uint64_t identity;   /* merge checks parts agree on                    */
    sive_result **views; /* one result per evaluation view (owned), NULL */
    size_t n_views;      /* when none; a view's own name:                  */
    char name[SIVEI_VIEW_NAME];
    uint64_t *ranges;    /* the moved parameters' ranges (NULL: all), and */
    size_t n_ranges;     /* how many parameters moved (dim when all)       */
    uint64_t moved;
    double h, eta;
    sivei_chain_out *c;  /* chains [begin, end) only: see sivei_chain() */
    double summary[SIVEI_N_STATS];
    double spread[SIVEI_N_STATS];
    uint32_t flags;
    double mala_step;    /* metropolis: median step the chains ran their
                            tail with (adapted or fixed), and their mean */
    double mala_accept;  /* tail acceptance; NaN otherwise (internal)     */
    char *health;        /* the flags' text, then the run notes            */
    char *notes;         /* the run notes alone (NULL: none): the lines the
                            run appended after the flags' text (defaults:,
                            radius:, metropolis:, ...; sivei_health_append),
                            stored in result files (format 5) and merged by
                            sivei_notes_merge(), since they cannot be
                            recomputed from the traces                    */
    int status, callback_code;
    char errmsg[SIVE_ERRMSG_LEN];
};

/* Chain c (begin <= c < end) of r.  Only the range is stored, so that a
 * part of a split run costs memory for its own chains only (merging K
 * one-chain parts stays linear in K); the chains outside it read as
 * NOT_RUN through the getters. */
static inline sivei_chain_out *sivei_chain(const sive_result *r, int32_t c)
{
    return &r->c[c - r->begin];
}

/* result.c: a result for the chains of its range [begin, end) (the others
 * NOT_RUN), statistics NaN; with traces != 0 every chain of the range has
 * traces of opt.steps entries, otherwise none yet (sivei_chain_traces). */
SIVE_HIDDEN sive_result *sivei_result_alloc(const sivei_options *o, double h,
                                            double eta, int32_t begin,
                                            int32_t end, int traces);
/* Traces of len entries (at least one is allocated) for chain ch. */
SIVE_HIDDEN int sivei_chain_traces(sivei_chain_out *ch, int64_t len);
/* The status and message of a result whose chains have been summarised
 * (SIVE_E_DIVERGED when none of its range finished); status is the run's. */
SIVE_HIDDEN void sivei_result_conclude(sive_result *r, int status, int cb_code,
                                       const char *msg);
/* FNV-1a 64 of n bytes, continuing from h (start: SIVEI_FNV_OFFSET). */
#define SIVEI_FNV_OFFSET 0xcbf29ce484222325ull
SIVE_HIDDEN uint64_t sivei_fnv1a64(uint64_t h, const void *p, size_t n);
/* Copy the tail of a chain's trace into a new array (*n entries). */
SIVE_HIDDEN double *sivei_tail_copy(const sive_result *r, const sivei_chain_out *c,
                                    sive_trace which, size_t *n);

/* params.c: the probe's parameter ranges checked against the model's dim; *ranges borrowed from p, *k the number of moved
 * parameters (dim without ranges).  And a result's copy of them
 * (SIVE_OK or SIVE_E_NOMEM). */
SIVE_HIDDEN int sivei_params_prepare(const sive_probe *p, uint64_t dim,
                                     const uint64_t **ranges, size_t *n, uint64_t *k,
                                     char *err);
SIVE_HIDDEN int sivei_result_set_params(sive_result *r, const uint64_t *ranges, size_t n,
                                        uint64_t k);

/* estimators.c: estimators of one finished chain (fills c->stat). */
SIVE_HIDDEN int sivei_chain_estimate(const sive_result *r, sivei_chain_out *c);
/* diagnostics.c: per-chain estimators, summaries over chains, multi-chain
 * ESS, split-Rhat; then health.c's flags. */
SIVE_HIDDEN int sivei_result_summarise(sive_result *r);
/* The summary (mean) and spread of statistic s over r's finished chains,
 * as sivei_result_summarise pools a SIVE_POOL_MEAN statistic: for the
 * statistics a sampler sets after it (its note). */
SIVE_HIDDEN void sivei_result_pool_mean(sive_result *r, int s);
/* diag_geometry.c: DLAMBDA_DLOG_H and its SE for the finished chains
 * ids[0..k-1] (SIVE_OK or SIVE_E_NOMEM), and a chain's STEP_CURVATURE. */
SIVE_HIDDEN int sivei_radius_sensitivity(sive_result *r, const int32_t *ids, size_t k);
SIVE_HIDDEN double sivei_step_curvature(const sive_result *r, const sivei_chain_out *c);
/* The share of a chain's tail variance of `which` (of its squares when
 * sq) carried by its largest squared deviations from the tail mean, a
 * fraction frac of the tail (at least one value): ~ 0.015-0.07 for a
 * stable chain, near 1 when a few spikes make the variance (health.c's
 * unstable).  NaN on a short tail; -1 when out of memory. */
/* A chain's tail displacement still growing: the mean of DISP over the
 * last quarter of the tail over that of the first quarter (~1 once the
 * chain has relaxed; ~1.5 for a random walk over the default tail).  NaN
 * on a short tail.  Reads the trace in place: it cannot fail. */
SIVE_HIDDEN double sivei_disp_growth(const sive_result *r, const sivei_chain_out *c);
SIVE_HIDDEN double sivei_spike_share(const sive_result *r, const sivei_chain_out *c,
                                     sive_trace which, int sq, double frac);
/* step0.c: the Richardson extrapolation weight lambda(other) + (1 -
 * weight) lambda(r) into statistics est and mcse of r (per chain and
 * summary), other the same chains with one knob changed (base_lr/2 for
 * SIVE_STEP0, 2 B_grad for SIVE_FULL_BATCH); SIVE_OK or SIVE_E_NOMEM. */
SIVE_HIDDEN int sivei_richardson(sive_result *r, const sive_result *other, double weight,
                                 int est, int mcse);
/* probe.c: one run of the chains with options o (validated, summarised,
 * concluded); SIVE_OK with *out, or a status with p's message. */
SIVE_HIDDEN int sivei_run_once(sive_probe *p, const sivei_options *o,
                               const sive_model *m, const void *theta_star,
                               sive_result **out);
/* defaults.c: SIVE_OPT_METROPOLIS = -1 resolved in o for model m at
 * theta (before the run's checks; an invalid model resolves to 0 and is
 * refused later): 0 with a radius set; else 1 with c_h = 0 when the loss
 * is exact, 0 otherwise; then kron_every and radius_lookahead = -1: 1 and
 * 8 on that exact path (kron only where the sampler takes the move and
 * ranges, the probe's parameter ranges, is 0), else 0.  d says what was
 * resolved and why (its health
 * line: sivei_defaults_note, SIVE_OK or SIVE_E_NOMEM).  SIVE_OK or
 * SIVE_E_NOMEM. */
typedef struct sivei_defaults {
    int resolved; /* 1: the model's rule ran (metropolis -1, no radius set) */
    int exact;    /* its outcome: 1 metropolis with c_h = 0 */
    int kron;      /* kron_every "auto" resolved to 1 */
    int lookahead; /* radius_lookahead "auto" resolved to 8 */
    int check;     /* radius_check "auto" resolved to 1 */
    char why[SIVE_ERRMSG_LEN];
} sivei_defaults;
SIVE_HIDDEN int sivei_defaults_resolve(sivei_options *o, const sive_model *m,
                                       const void *theta, int ranges, sivei_defaults *d);
SIVE_HIDDEN int sivei_defaults_note(sive_result *r, const sivei_defaults *d);
/* radius_check.c: after run r at a fixed radius with radius_check 1,
 * paired pilots at r's h and larger radii; a rise beyond the plateau band
 * raises SIVE_FLAG_RADIUS_BOUND on r, and a note says what the pilots saw
 * (a pilot's callback error or cancel becomes r's status).  SIVE_OK, or
 * a status with p's message (r unchanged but for its notes). */
SIVE_HIDDEN int sivei_radius_check(sive_probe *p, const sive_model *m, const void *theta_star,
                                   sive_result *r);
/* A loaded or merged result's notes hold the check's radius_bound line:
 * the flag again (sivei_result_add_notes calls it). */
SIVE_HIDDEN void sivei_radius_check_reflag(sive_result *r);
#define SIVEI_AUTO_LADDER 12 /* radius_auto.c's AUTO_LEVELS */
/* How the radius search ended: the level it kept and why. */
typedef enum sivei_auto_end {
    SIVEI_END_NONE,         /* no plateau: the flattest level */
    SIVEI_END_PLATEAU,      /* a plateau */
    SIVEI_END_FLAT_PAIR,    /* past a jump: the flattest pair's smaller h */
    SIVEI_END_BEFORE_JUMP,  /* a jump before any plateau: the h before it */
    SIVEI_END_BEFORE_SHARE, /* before the step's curvature share grew */
    /* radius_lookahead: */
    SIVEI_END_LOOK_HELD, /* a plateau held for K doublings (or to the last level) */
    SIVEI_END_LOOK_LOST, /* before a lost chain or the acceptance's collapse */
    SIVEI_END_LOOK_FELL, /* before lambda-hat fell */
    SIVEI_END_ROSE_OUT,  /* the largest level after a rise past a plateau (levels ran out) */
    SIVEI_END_ROSE_FELL, /* ditto, before a fall */
    SIVEI_AUTO_ENDS      /* the count */
} sivei_auto_end;
/* radius_auto.c's pilot machinery, shared by the radius search and the
 * radius check (radius_check.c).  A level counts as a plateau while
 * lambda-hat moves by at most SIVEI_PLATEAU_BAND from it (SIVEI_PLATEAU_Z
 * standard errors of the paired change included), and a fixed
 * Metropolis step stops sharing paths between levels below an acceptance
 * of SIVEI_PILOT_ACCEPT_LOW. */
#define SIVEI_PLATEAU_BAND 0.04
#define SIVEI_PLATEAU_Z 2.0
#define SIVEI_PILOT_ACCEPT_LOW 0.3
#define SIVEI_PILOT_CHAINS 4
/* One pilot level: the summary slope (covariance identity) and the
 * chains' unclipped estimates, for the paired difference to another. */
typedef struct sivei_level {
    double h, lam, e, se, share, accept, chain[SIVEI_PILOT_CHAINS];
    int k, ok;
} sivei_level;
/* The pilot options: absolute radius h, chains 0 .. K-1 whatever the
 * caller's range (every part of a split run then makes the same pilots),
 * a fifth of the steps (at least 5000, at most the run's), every chain
 * hot, no anchor, no extrapolation. */
SIVE_HIDDEN sivei_options sivei_pilot_options(const sivei_options *o, double h);
/* A pilot's result r at radius h read into l (cannot fail). */
SIVE_HIDDEN void sivei_pilot_read(const sive_result *r, double h, sivei_level *l);
/* The paired relative change of lambda-hat from level a to level b (the
 * same chains on the same random numbers) and its standard error. */
SIVE_HIDDEN void sivei_pilot_change(const sivei_level *a, const sivei_level *b, double *rel,
                                    double *se);
/* radius_auto.c: the radius from the loss (c_h = 0).  The chosen h, the
 * pilot's cost and the slope d ln lambda-hat / d ln h where it stopped. */
typedef struct sivei_auto {
    double h, slope, slope_se, share;
    int levels;
    sivei_auto_end accepted; /* how the search ended (the health text's ending) */
    int64_t pilot_steps; /* chain steps, summed over pilot chains */
    int doublings;       /* metropolis: full-length runs that said radius_bound */
    int jumps;           /* metropolis: jumps past a plateau that found a rise, */
    double jump_from;    /* the last one from this h                          */
    int looked;          /* radius_lookahead: pilots past a plateau           */
    int n_pilot;         /* the pilots' ladder, for the health text: h and    */
    double pilot_h[SIVEI_AUTO_LADDER], pilot_lam[SIVEI_AUTO_LADDER]; /* lambda */
} sivei_auto;
/* Pilot runs of o at absolute radii; SIVE_OK with a filled, or a status
 * with p's message.  A pilot ending in a callback error or a cancel is
 * handed back in *failed (the caller returns it as the run's result). */
SIVE_HIDDEN int sivei_radius_auto(sive_probe *p, const sivei_options *o,
                                  const sive_model *m, const void *theta_star,
                                  sivei_auto *a, sive_result **failed);
/* The no-plateau fallback's order of two pilot levels by slope e and its
 * standard error: 1 if (ea, sea) is the flatter (radius_auto.c). */
SIVE_HIDDEN int sivei_auto_flatter(double ea, double sea, double eb, double seb);
/* Append the choice to r's health text (SIVE_OK or SIVE_E_NOMEM). */
SIVE_HIDDEN int sivei_radius_auto_note(sive_result *r, const sivei_auto *a);
/* anneal.c (the experimental option anneal; docs/theory.md, "Annealed
 * burn-in"): whether chain c starts cold (at t from theta*) under o, the
 * inverse temperature of chain c at step m (o->t exactly when the option
 * is off, the chain cold, or m past the ramp), and the start test over
 * r's finished chains: its z (SIVE_STAT_START_Z; NaN without the option
 * or a finished chain of each kind) and the two groups' mean lambda-hat
 * (hot, cold). */
SIVE_HIDDEN int sivei_anneal_cold(const sivei_options *o, int32_t c);
SIVE_HIDDEN double sivei_anneal_t(const sivei_options *o, int32_t c, int64_t m);
SIVE_HIDDEN double sivei_anneal_eta(const sivei_options *o, double run_eta, double t_step);
SIVE_HIDDEN int sivei_group_var(const sive_result *r, const int32_t *ids, size_t k, int lbar,
                                double *v, double *tau, double *dof);
/* The start test (docs/theory.md, "Annealed burn-in"): hot minus cold
 * [0] lambda-hat and [1] t times the tail mean loss, each over the
 * groups' combined standard error (each group's autocorrelation pooled
 * over its own chains), as a Welch t mapped to the normal deviate of the
 * same tail probability, and the deviate of the smaller tail
 * probability doubled (zmin, with its sign); NaN without the option or a
 * finished chain of each kind. */
typedef struct sivei_start {
    double z[2];       /* lambda-hat, t mean Lbar */
    double mean[2][2]; /* [statistic][0 hot, 1 cold] */
    double dof[2];     /* Welch-Satterthwaite */
    double zmin;       /* SIVE_STAT_START_Z: both at once (Bonferroni) */
} sivei_start;
SIVE_HIDDEN int sivei_start_test(const sive_result *r, sivei_start *s);
/* the start test's variants (development; bench_start prints them) */
enum { SIVEI_START_VARIANTS = 8 };
SIVE_HIDDEN int sivei_start_variants(const sive_result *r, double z[SIVEI_START_VARIANTS],
                                     double mean[2][2]);
/* health.c: flags and their text from the summaries. */
SIVE_HIDDEN int sivei_result_health(sive_result *r, double worst_z,
                                    int32_t worst_z_chain);

/* Room for sampler and evaluator modules (lib/core/sampler.h, lib/core/evaluator.h;
 * sampler.c and evaluator.c check their registries fit). */
#define SIVEI_MAX_SAMPLERS 8
#define SIVEI_MAX_EVALUATORS 8

/* Everything one run shares between worker threads.  The options and the
 * model are copies taken at the start: nothing reads the caller's probe
 * or model description while chains run. */
typedef struct sivei_run {
    sivei_options opt;
    sive_model model;
    sive_progress_fn progress;
    void *progress_user;
    const void *theta_star; /* float or double, by model.dtype */
    /* the parameters the chains move: n_ranges ascending [begin, end)
     * pairs (borrowed from the probe), none = all of theta; moved = their
     * count (dim without ranges) */
    const uint64_t *ranges;
    size_t n_ranges;
    uint64_t moved;
    /* evaluation views (borrowed from the probe; views.c), their results
     * are r->views */
    const sivei_view *views;
    size_t n_views;
    double h, eta;
    int star_exact; /* the probe's: the exact call at theta* passed */
    /* evaluators (evaluator.c): which modules the options select (bit k
     * for registry entry k), the one that evaluates, each one's run state */
    unsigned evaluator_on;
    int evaluator_base;
    void *evaluator_state[SIVEI_MAX_EVALUATORS];
    /* samplers (sampler.c): which modules the options select (bit k for
     * registry entry k), the one that steps, and each one's run state */
    unsigned sampler_on;
    int sampler_stepper;
    void *sampler_state[SIVEI_MAX_SAMPLERS];
    sive_result *r;
    atomic_int next_chain;
    atomic_int stop;        /* set when a chain hit a callback error or cancel */
    pthread_mutex_t lock;   /* guards the fields below                          */
    int status;             /* first fatal status (CALLBACK, CANCELLED, NOMEM)  */
    int callback_code;
    char errmsg[SIVE_ERRMSG_LEN];
} sivei_run;

/* The parameters a run's chains move, as ranges: k = 0 .. count-1 gives
 * [*b, *e) (all of theta, one range, without sive_probe_set_params). */
static inline size_t sivei_range_count(const sivei_run *run)
{
    return run->n_ranges ? run->n_ranges : 1;
}

static inline void sivei_range_at(const sivei_run *run, size_t k, size_t *b, size_t *e)
{
    *b = run->n_ranges ? (size_t)run->ranges[2 * k] : 0;
    *e = run->n_ranges ? (size_t)run->ranges[2 * k + 1] : run->model.dim;
}

/* Langevin normals are drawn and used this many at a time (the same
 * sequence as drawing all d at once), so the noise never needs d elements
 * of memory and stays in L1 between the sampler and the update. */
#define SIVEI_NOISE_CHUNK 2048

/* Distinct indices of a step's evaluation draws (dedup.c). */
typedef struct sivei_dedup {
    uint64_t n;          /* data-set size                                 */
    uint32_t *slot;      /* n entries (all UINT32_MAX between calls), or
                            NULL: sort instead (large data sets)         */
    uint64_t *pairs;     /* sort path: draws x (index, position)         */
    uint64_t *uniq;      /* distinct indices, ascending                  */
    uint32_t *which;     /* draw p -> its rank among the distinct ones   */
    double *loss;        /* per distinct index                           */
} sivei_dedup;

SIVE_HIDDEN int sivei_dedup_init(sivei_dedup *d, uint64_t n, size_t draws);
SIVE_HIDDEN void sivei_dedup_release(sivei_dedup *d);
/* Fill d->uniq (ascending) and d->which for idx[0..draws-1]; returns the
 * number of distinct indices. */
SIVE_HIDDEN size_t sivei_dedup_run(sivei_dedup *d, const uint64_t *idx, size_t draws);

/* Per-worker scratch reused across the chains a worker runs. */
typedef struct sivei_work {
    sivei_run *run;
    int32_t worker;
    void *theta, *grad;         /* dim elements of the model's dtype */
    void *noise;                /* min(dim, SIVEI_NOISE_CHUNK) elements */
    double *group_loss;         /* N                               */
    uint64_t *eval_idx;         /* N * B_eval (NULL without data)  */
    uint64_t *grad_idx;         /* B_grad                          */
    uint32_t *perm_grad;        /* data size each, sampling without  */
    uint32_t *perm_eval;        /* replacement (one per draw stream) */
    sivei_dedup dedup;          /* per-example models only         */
    void *evaluator_state[SIVEI_MAX_EVALUATORS]; /* each module's scratch */
    void *sampler_state[SIVEI_MAX_SAMPLERS]; /* each module's scratch */
    /* the chain's inverse temperature at the current step and its eta =
     * base_lr / t_step (set by the chain before each step: anneal.c) */
    double t_step, eta_step;
} sivei_work;

SIVE_HIDDEN int sivei_work_init(sivei_work *w, sivei_run *run, int32_t worker);
SIVE_HIDDEN void sivei_work_release(sivei_work *w);
/* Run chain c into run->r->c[c]; a fatal status (callback error, cancel)
 * is recorded in run. */
SIVE_HIDDEN void sivei_chain_run_f32(sivei_run *run, sivei_work *w, int32_t c);
SIVE_HIDDEN void sivei_chain_run_f64(sivei_run *run, sivei_work *w, int32_t c);
/* chain.c: batches of `batch` indices in [0, n) into idx[0..total-1],
 * uniform with replacement (perm NULL) or distinct within a batch (a
 * partial shuffle of perm). */
SIVE_HIDDEN void sivei_draw_indices(sivei_pcg32 *g, uint64_t *idx, size_t total,
                                    size_t batch, uint64_t n, uint32_t *perm);
/* evaluator.c: the modules a run's options select (before the chains; a
 * callback error or cancel is recorded in run and SIVE_OK returned, other
 * errors returned with their message in err), their release, the
 * per-worker scratch, one evaluation at theta (draws, callbacks, group
 * means into w->group_loss; 0 or the callback's code), the modules'
 * rewrite of a step's per-example losses, and their offsets added to a
 * step's Lbar (lib/core/evaluator.h). */
SIVE_HIDDEN int sivei_evaluators_prepare(sivei_run *run, char *err);
SIVE_HIDDEN void sivei_evaluators_release(sivei_run *run);
SIVE_HIDDEN int sivei_evaluators_work_init(sivei_work *w);
SIVE_HIDDEN void sivei_evaluators_work_release(sivei_work *w);
SIVE_HIDDEN int sivei_evaluate(sivei_run *run, sivei_work *w, sivei_pcg32 *rng,
                               const void *theta, int32_t c, int64_t m);
SIVE_HIDDEN int sivei_evaluators_examples(sivei_run *run, sivei_work *w,
                                          const sive_batch *eb);
SIVE_HIDDEN void sivei_evaluators_offset(const sivei_run *run, double *lbar);
SIVE_HIDDEN void sivei_evaluators_chain_start(sivei_work *w, int32_t c);
SIVE_HIDDEN int sivei_evaluators_observe(sivei_run *run, sivei_work *w, const void *theta,
                                         int32_t c, int64_t m);
/* views.c: the probe's views checked against the run's model (SIVE_OK or
 * SIVE_E_INVALID_ARG with err), their results allocated in run->r
 * (SIVE_E_NOMEM), and after the chains their path traces and statuses
 * copied from the run's chains and their statistics computed. */
SIVE_HIDDEN int sivei_views_prepare(const sive_probe *p, sivei_run *run, char *err);
SIVE_HIDDEN int sivei_views_finish(sive_result *r);
/* Does view v get control variates in run (the run's option on and the
 * view has per-example losses)?  Its result's control_variate says so. */
SIVE_HIDDEN int sivei_view_uses_cv(const sivei_run *run, const sivei_view *v);
SIVE_HIDDEN void sivei_probe_views_free(sive_probe *p);
/* sampler.c: the modules a run's options select (before the chains; a
 * callback error is recorded in run and SIVE_OK returned, other errors
 * returned with their message in err), their release, the per-worker
 * scratch, and the chain's two calls into them (lib/core/sampler.h). */
SIVE_HIDDEN int sivei_samplers_prepare(sivei_run *run, char *err);
SIVE_HIDDEN void sivei_samplers_release(sivei_run *run);
SIVE_HIDDEN int sivei_samplers_work_init(sivei_work *w);
SIVE_HIDDEN void sivei_samplers_work_release(sivei_work *w);
SIVE_HIDDEN void sivei_samplers_chain_start(sivei_work *w, int32_t c);
SIVE_HIDDEN int sivei_samplers_gradient(sivei_run *run, sivei_work *w, const sive_batch *gb);
/* The modules' lines for the run's health text, after the summary
 * (SIVE_OK or SIVE_E_NOMEM). */
SIVE_HIDDEN int sivei_samplers_note(sivei_run *run);
/* Append one line (with its newline) to r's health text (SIVE_OK or
 * SIVE_E_NOMEM). */
SIVE_HIDDEN int sivei_health_append(sive_result *r, const char *line);
/* n bytes of src appended to the NUL-terminated text *s (NULL: empty),
 * reallocated (SIVE_OK or SIVE_E_NOMEM, *s unchanged). */
SIVE_HIDDEN int sivei_text_append(char **s, const char *src, size_t n);
/* The run notes of a loaded or merged result (text: lines each ending in
 * a newline, or empty) appended to its health text as the run appended
 * them (SIVE_OK or SIVE_E_NOMEM). */
SIVE_HIDDEN int sivei_result_add_notes(sive_result *r, const char *text);
/* result_merge.c: the merged run notes of parts[0 .. n-1] (malloc'ed;
 * NULL when out of memory): see docs/scale.md, "Run notes". */
SIVE_HIDDEN char *sivei_notes_merge(const sive_result *const *parts, size_t n);
/* The name of the first option (threads and the chain range excepted)
 * on which a and b differ, or NULL (result_merge.c). */
SIVE_HIDDEN const char *sivei_option_mismatch(const sivei_options *a, const sivei_options *b);
/* 1 when the stepper already holds the gradient at w->theta (and the
 * loss, into *loss): no gradient call for this step. */
SIVE_HIDDEN int sivei_samplers_cached(sivei_run *run, sivei_work *w, double *loss);
SIVE_HIDDEN int sivei_samplers_step(sivei_run *run, sivei_work *w, sivei_pcg32 *noise,
                                    int64_t m, double *gnorm, double *disp);
/* Record the first fatal status of a run (thread-safe).  A callback's
 * message (sive_set_errmsg or the library's own) is appended. */
SIVE_HIDDEN void sivei_run_fail(sivei_run *run, int status, int cb_code,
                                const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Should the progress callback be called at step m (count or time)?  k
 * starts zeroed for each chain. */
typedef struct sivei_clock {
    double last_report, check_time;
    int64_t check_step, next_check;
} sivei_clock;
SIVE_HIDDEN int sivei_progress_due(sivei_clock *k, int64_t m, int64_t every);

#endif
