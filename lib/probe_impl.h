/* Shared internals of the probe, the chains and the result (not installed). */
#ifndef SIVE_PROBE_IMPL_H
#define SIVE_PROBE_IMPL_H

#include "internal.h"
#include "rng.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum { SIVE_DTYPE_NONE = 0, SIVE_DTYPE_F32 = 1, SIVE_DTYPE_F64 = 2 };

/* Independent random streams of a chain, one per purpose, so that changing
 * N (evaluation draws) leaves the Langevin path untouched. */
enum {
    SIVE_STREAM_NOISE = 0,   /* Langevin normals                  */
    SIVE_STREAM_GRAD_IDX = 1,/* gradient batch indices            */
    SIVE_STREAM_EVAL_IDX = 2,/* evaluation batch indices          */
    SIVE_STREAM_GRAD_CB = 3, /* seeds handed to the grad callback */
    SIVE_STREAM_EVAL_CB = 4, /* seeds handed to the eval callback */
    SIVE_STREAM_COUNT = 5
};

typedef struct sive_options {
    double t, base_lr, h, c_h, burn_in, anchor;
    int h_absolute;
    int64_t steps, groups, eval_batch, grad_batch, data_size, chains, threads;
    int64_t replacement, eval_stride;
    uint64_t seed;
} sive_options;

struct sive_probe {
    size_t dim;
    sive_options opt;
    int dtype;
    union { sive_grad_f32_fn f32; sive_grad_f64_fn f64; } grad;
    union { sive_eval_f32_fn f32; sive_eval_f64_fn f64; } eval;
    void *user;
    sive_progress_fn progress;
    void *progress_user;
    int callback_code;
    char errmsg[SIVE_ERRMSG_LEN];
};

typedef struct sive_chain_out {
    sive_chain_status status;
    int64_t stop_step; /* step where it diverged or stopped; M if finished */
    int64_t steps_run; /* length of the traces                           */
    double *trace[SIVE_TRACE_COUNT_];
    double stat[SIVE_STAT_COUNT_];
} sive_chain_out;

struct sive_result {
    int32_t chains, chains_ok;
    int64_t steps, stride, tail_start;
    double t, h, eta;
    int64_t groups;
    double anchor;
    sive_chain_out *c;
    double summary[SIVE_STAT_COUNT_];
    double spread[SIVE_STAT_COUNT_];
    uint32_t flags;
    char *health;
};

/* Everything one run shares between worker threads. */
typedef struct sive_run {
    const sive_probe *p;
    const void *theta_star; /* float or double, by p->dtype */
    double h, eta;
    sive_result *r;
    atomic_int next_chain;
    atomic_int stop;        /* set when a chain hit a callback error or cancel */
    pthread_mutex_t lock;   /* guards the fields below                          */
    int status;             /* first fatal status (CALLBACK, CANCELLED, NOMEM)  */
    int callback_code;
    char errmsg[SIVE_ERRMSG_LEN];
} sive_run;

/* Langevin normals are drawn and used this many at a time (the same
 * sequence as drawing all d at once), so the noise never needs d elements
 * of memory and stays in L1 between the sampler and the update. */
#define SIVE_NOISE_CHUNK 2048

/* Per-worker scratch reused across the chains a worker runs. */
typedef struct sive_work {
    void *theta, *grad;         /* dim elements of the run's dtype */
    void *noise;                /* min(dim, SIVE_NOISE_CHUNK) elements */
    double *group_loss;         /* N                               */
    uint64_t *eval_idx;         /* N * B_eval (NULL without data)  */
    uint64_t *grad_idx;         /* B_grad                          */
    uint64_t *perm;             /* data size, sampling w/o replacement */
} sive_work;

SIVE_HIDDEN int sive_work_init(sive_work *w, const sive_probe *p);
SIVE_HIDDEN void sive_work_release(sive_work *w);
/* Run chain c of the run into run->r->c[c]; returns 0, or a fatal status
 * already recorded in run (callback error, cancel). */
SIVE_HIDDEN int sive_chain_run_f32(sive_run *run, sive_work *w, int32_t c);
SIVE_HIDDEN int sive_chain_run_f64(sive_run *run, sive_work *w, int32_t c);
/* Record the first fatal status of a run (thread-safe). */
SIVE_HIDDEN void sive_run_fail(sive_run *run, int status, int cb_code,
                               const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Estimators of one finished chain (fills c->stat); needs tail >= 4. */
SIVE_HIDDEN int sive_chain_estimate(const sive_result *r, sive_chain_out *c);
/* Summaries over chains, multi-chain ESS, split-Rhat, health flags. */
SIVE_HIDDEN int sive_result_summarise(sive_result *r);
/* Copy the tail of a chain's Lbar (or S2) trace into a new array. */
SIVE_HIDDEN double *sive_tail_copy(const sive_result *r, const sive_chain_out *c,
                                   sive_trace which, size_t *n);
/* Number of evaluated steps in the tail window. */
SIVE_HIDDEN int64_t sive_tail_count(int64_t steps, int64_t tail_start, int64_t stride);

#endif
