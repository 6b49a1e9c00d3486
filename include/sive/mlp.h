/*
 * libsive - reference multi-layer perceptron, its checkpoints, and the
 * adapter that lets a probe sample it.
 *
 * The model is the paper's MNIST network: in -> h1 -> h2 -> classes with
 * ReLU activations and a softmax cross-entropy loss (784-128-128-10 by
 * default, 118 282 parameters).  It is one client of the public callback API
 * in sive.h, written so that the paper's experiments run out of the box; any
 * other model plugs into the probe the same way.
 *
 * Parameters live in one caller-owned float vector theta, laid out like a
 * PyTorch nn.Sequential of nn.Linear layers flattened in order:
 *
 *     W1 [h1][in], b1 [h1], W2 [h2][h1], b2 [h2], W3 [classes][h2], b3 [classes]
 *
 * each W row-major with shape [out_features][in_features].  A state dict
 * exported from PyTorch in that order can be copied in unchanged.
 *
 * Inputs are the data set's bytes scaled to [0, 1] (pixel / 255); labels are
 * 0 .. classes-1.  Losses are natural-log cross-entropy; "mean loss" is the
 * mean over the examples of a batch, as nn.CrossEntropyLoss() computes it.
 *
 * Objects:
 *  - sive_mlp: the architecture (layer sizes only, no parameters).
 *    Immutable after creation: one instance may be shared by any number of
 *    threads.
 *  - sive_mlp_work: scratch buffers for one thread plus the BLIS thread
 *    count its matrix products use.  Every compute function takes one; a
 *    workspace may be used by one thread at a time.  Batches of any size
 *    are processed in blocks of rows, so the workspace size does not depend
 *    on the batch size and the compute functions never allocate.
 *  - sive_mlp_model(): describes the network on a training set as a probe
 *    model (sive.h's sive_model).
 *
 * Errors: functions return SIVE_OK or a negative SIVE_E_* status (sive.h);
 * sive_last_errmsg() then holds a message for the calling thread.  Output
 * buffers have unspecified contents after a failure.  Nothing prints or
 * aborts.
 */
#ifndef SIVE_MLP_H
#define SIVE_MLP_H

#include "sive.h"
#include "data.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest accepted layer width (inputs, hidden units or classes). */
#define SIVE_MLP_MAX_WIDTH ((size_t)1 << 24)
/** Largest accepted parameter count (2^32 floats, 16 GiB). */
#define SIVE_MLP_MAX_PARAMS ((uint64_t)1 << 32)
/** Rows per block used when sive_mlp_work_new() is given block_rows 0. */
#define SIVE_MLP_DEFAULT_BLOCK_ROWS 256

/* ------------------------------------------------------------------ */
/* Architecture                                                       */
/* ------------------------------------------------------------------ */

typedef struct sive_mlp sive_mlp;

/**
 * Create the architecture in -> h1 -> h2 -> classes.  *out is set to NULL on
 * failure; on success the caller owns *out and frees it with sive_mlp_free().
 * Errors: SIVE_E_INVALID_ARG (out NULL; a width 0 or above
 * SIVE_MLP_MAX_WIDTH; classes < 2; more than SIVE_MLP_MAX_PARAMS
 * parameters), SIVE_E_NOMEM.
 */
SIVE_API int sive_mlp_new(sive_mlp **out, size_t in, size_t h1, size_t h2,
                          size_t classes);

/** Free an architecture (NULL is a no-op).  Workspaces made from it must
 *  not be used afterwards (probe models keep their own copy). */
SIVE_API void sive_mlp_free(sive_mlp *m);

/** Number of parameters: h1*(in+1) + h2*(h1+1) + classes*(h2+1)
 *  (118 282 for 784-128-128-10); 0 if m is NULL. */
SIVE_API size_t sive_mlp_dim(const sive_mlp *m);

/**
 * Layer sizes.  Any output pointer may be NULL.  Returns SIVE_E_INVALID_ARG
 * if m is NULL (outputs untouched).
 */
SIVE_API int sive_mlp_sizes(const sive_mlp *m, size_t *in, size_t *h1,
                            size_t *h2, size_t *classes);

/**
 * The index range [*begin, *end) of a named block of parameters in theta,
 * for weight-restricted probes (sive_probe_set_params()).  Names as
 * PyTorch's nn.Linear layers numbered from 1: "1.weight", "1.bias",
 * "2.weight", "2.bias", "3.weight", "3.bias", and "layer1", "layer2",
 * "layer3" for a whole layer (its weights, then its bias: one range).  Errors:
 * SIVE_E_INVALID_ARG (m, name, begin or end NULL, or an unknown name:
 * sive_last_errmsg() lists the names).  Thread-safe.
 */
SIVE_API int sive_mlp_param_range(const sive_mlp *m, const char *name, uint64_t *begin,
                                  uint64_t *end);

/**
 * Fill theta[0 .. dim-1] with PyTorch's default nn.Linear initialisation:
 * every weight and bias of a layer drawn uniformly from
 * [-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in being the layer's input width.
 * The values depend only on the sizes and seed (a PCG32 stream private to
 * this function), not on the platform or thread count.
 * Errors: SIVE_E_INVALID_ARG (m or theta NULL).
 */
SIVE_API int sive_mlp_init_params(const sive_mlp *m, float *theta,
                                  uint64_t seed);

/* ------------------------------------------------------------------ */
/* Workspaces                                                         */
/* ------------------------------------------------------------------ */

typedef struct sive_mlp_work sive_mlp_work;

/**
 * Create a workspace for models of m's shape.
 *
 * block_rows is the number of examples pushed through the network at once
 * (0 selects SIVE_MLP_DEFAULT_BLOCK_ROWS, at most 2^20).  Any batch size
 * works with any block size; larger blocks use more memory and amortise
 * the packing of the weights in each matrix product, smaller ones keep the
 * activations in cache.  Results depend (in the last bits) on block_rows,
 * never on blis_threads or on the calling thread; the passes without a
 * gradient (example and group losses, evaluation) do not depend on it at
 * all.  With BLIS's skx kernels those passes take blocks of 2 * block_rows
 * and the workspace also holds a transposed copy of the weights (d
 * floats), which packs faster; on CPUs with AVX-512 VBMI it also holds
 * W1 packed for the kernel (about h1 * in floats), and those passes on
 * one BLIS thread feed the examples' bytes to the kernel directly: the
 * same bits, less time.
 *
 * blis_threads (1 .. 1024) is the number of threads BLIS uses inside each
 * matrix product made with this workspace; it is private to the workspace
 * (a BLIS rntm_t), so workspaces with different counts can run at the same
 * time.  A BLIS built without threading silently uses one.  With an
 * OpenMP BLIS (Debian's), idle BLIS threads spin for a while after each
 * product; OMP_WAIT_POLICY=passive stops that when cores are shared.  For
 * the probe, one BLIS thread per chain and chains on parallel probe
 * threads scale better than many BLIS threads per chain.
 *
 * The workspace stays valid for any architecture of the same shape (for
 * example one loaded from a checkpoint).  *out is NULL on failure.  Errors:
 * SIVE_E_INVALID_ARG, SIVE_E_NOMEM.
 */
SIVE_API int sive_mlp_work_new(sive_mlp_work **out, const sive_mlp *m,
                               size_t block_rows, int blis_threads);

/**
 * The BLIS kernel set the MLP runs on and why (static text, never NULL):
 * the set's name as BLIS spells it ("skx", "zen3", "haswell", ...), then
 * " (" and the reason, e.g. "skx (chosen by libsive: AVX-512 F/DQ/BW/VL
 * with two 512-bit FMA units ...)".  The first call (made by the first
 * sive_mlp_work_new()) initialises BLIS and chooses the set once for the
 * process.  Debian's BLIS 0.9 picks from CPUID tables that predate recent
 * CPUs; libsive selects a faster set the CPU can run where those tables
 * fall short:
 *  - skx when CPUID reports AVX-512 F/DQ/BW/VL (with the OS saving the
 *    ZMM state) and a 1.5 ms timing of 512-bit against 256-bit FMAs at
 *    first use shows two full-width 512-bit FMA units (BLIS 0.9
 *    takes skx only for the model names it lists, e.g. not for
 *    Sapphire/Emerald Rapids, and falls back to haswell, about 1.8x
 *    slower sgemm);
 *  - zen3 on AMD family 0x1a and later (Zen 5) with AVX2 and FMA, where
 *    BLIS would use its generic kernels (about 3x slower).
 * It does so through BLIS's own override, the BLIS_ARCH_TYPE environment
 * variable, set only during BLIS's initialisation and removed again.  A
 * BLIS_ARCH_TYPE set by the user is honoured as BLIS reads it (an id BLIS
 * does not have aborts in BLIS); SIVE_BLIS_AUTO=0 keeps BLIS's own choice.
 * If BLIS was initialised before this call (by other code in the
 * process), its choice stands and the text says so.  Results depend (in
 * the last bits) on the kernel set.  Because the first call briefly
 * changes the process environment, call this early in main() if other
 * threads may read the environment at that time.  Thread-safe.
 */
SIVE_API const char *sive_mlp_blis_kernels(void);

/** Free a workspace (NULL is a no-op). */
SIVE_API void sive_mlp_work_free(sive_mlp_work *w);

/*
 * Common rules of the compute functions below:
 *  - theta holds sive_mlp_dim(m) floats; it is only read unless stated.
 *  - ds must have rows*cols == in.  Example indices (idx) must be below
 *    sive_dataset_count(ds) and the examples' labels below classes.
 *  - w must have been created for m's shape and is used by one thread at a
 *    time; m, theta and ds may be shared between threads.
 *  - No memory is allocated, except by sive_mlp_train_epoch().
 *  - Errors: SIVE_E_INVALID_ARG (NULL pointer, n = 0, shape mismatch, index
 *    or label out of range).  Non-finite parameters are not an error: they
 *    produce non-finite losses.
 */

/**
 * Per-example losses: loss_out[i] = cross-entropy of example idx[i],
 * i = 0 .. n-1 (computed and stored in double; 0.1 stored float).
 */
SIVE_API int sive_mlp_example_losses(const sive_mlp *m, sive_mlp_work *w,
                                     const float *theta,
                                     const sive_dataset *ds,
                                     const uint64_t *idx, size_t n,
                                     double *loss_out);

/**
 * Gradient of the mean loss over the batch idx[0 .. n-1] with respect to
 * theta, written to grad[0 .. dim-1] (same layout as theta; must not alias
 * it).  *mean_loss (may be NULL) receives the batch's mean loss.
 */
SIVE_API int sive_mlp_loss_grad(const sive_mlp *m, sive_mlp_work *w,
                                const float *theta, const sive_dataset *ds,
                                const uint64_t *idx, size_t n, float *grad,
                                double *mean_loss);

/**
 * Grouped evaluation, the probe's observation: idx holds
 * n_groups*group_size indices, group-major; group_loss[g] receives the mean
 * loss of group g (accumulated in double).  Rows are streamed through the
 * network in blocks, so the cost is that of one forward pass over
 * n_groups*group_size examples and memory does not grow with n_groups.
 */
SIVE_API int sive_mlp_group_losses(const sive_mlp *m, sive_mlp_work *w,
                                   const float *theta, const sive_dataset *ds,
                                   const uint64_t *idx, size_t n_groups,
                                   size_t group_size, double *group_loss);

/**
 * Mean loss and accuracy (fraction of examples whose largest logit, first
 * one on ties, is the label) over the whole data set, in order.  Either
 * output may be NULL.
 */
SIVE_API int sive_mlp_evaluate(const sive_mlp *m, sive_mlp_work *w,
                               const float *theta, const sive_dataset *ds,
                               double *mean_loss, double *accuracy);

/**
 * One epoch of plain SGD (theta -= lr * grad of the batch mean loss) over a
 * permutation of ds drawn from (seed, epoch): ceil(count/batch) steps, the
 * last batch holding the remainder.  The same (theta, seed, epoch, batch,
 * block_rows) always gives the same result.  *mean_train_loss (may be
 * NULL) receives the mean over all examples of the loss each had in its
 * step (the running training loss PyTorch loops usually print).
 * theta is updated in place.  Allocates a permutation and a gradient buffer
 * for the duration of the call.  Errors: SIVE_E_INVALID_ARG (also for lr
 * not finite and positive, batch 0), SIVE_E_NOMEM.
 */
SIVE_API int sive_mlp_train_epoch(const sive_mlp *m, sive_mlp_work *w,
                                  float *theta, const sive_dataset *ds,
                                  float lr, size_t batch, uint64_t seed,
                                  uint64_t epoch, double *mean_train_loss);

/* ------------------------------------------------------------------ */
/* The MLP as a probe model                                           */
/* ------------------------------------------------------------------ */

/**
 * Describe model m on data set train as a probe model: fills *out (which
 * sive_model_init() must have prepared) with dtype SIVE_F32, dim
 * sive_mlp_dim(m), n_examples the number of training examples, the
 * gradient callback (sive_mlp_loss_grad()) and the per-example loss
 * callback (sive_mlp_example_losses()), so that the library's grouping and
 * deduplication apply, and (when out's struct_size covers it) identity
 * from the layer sizes and sive_dataset_hash(train), one pass over the
 * data set.  Run it with sive_probe_run(p, out, theta, &r), then release
 * it with sive_model_destroy(out).
 *
 * The model keeps a copy of the architecture, so m may be freed after this
 * call; train is borrowed and must outlive the model.  Each worker thread
 * of a run gets its own workspace (sive_batch.worker), made on its first
 * callback, with blis_threads BLIS threads (1 .. 1024; probe threads x
 * blis_threads should not exceed the cores available).  With
 * blis_threads > 1 each worker times its gradient calls, block by block,
 * with one BLIS thread and (while the load average leaves the cores) with
 * blis_threads, uses the faster for its gradient and loss calls and
 * re-tries the other now and then (the tries cost at most 2 %):
 * several BLIS threads per chain help on idle cores but, when another
 * process takes a core, every product waits for the thread that shares
 * it (docs/performance.md, section 11).  SIVE_BLIS_ADAPT=0 in the
 * environment (read here) keeps blis_threads throughout.  Results are
 * bit-identical whatever the number of probe or BLIS threads, and equal
 * to 0.1's binding at the same seed on the same BLIS kernel set (see
 * sive_mlp_blis_kernels()).  Runs may share one model only if they
 * never call it with the same worker number at once (a worker's
 * workspace is its own, not locked): sive_probe_sweep() with parallel > 1
 * guarantees that, by offsetting each slot's worker numbers; two
 * sive_probe_run() calls at once on one model do not (each uses workers
 * 0 .. threads-1), so give each its own model (train may be shared).
 * All labels of train are checked here.
 *
 * Errors (out unchanged but for struct_size): SIVE_E_INVALID_ARG (NULL
 * pointer, out not initialised, shape mismatch, empty data set, label out
 * of range, bad blis_threads), SIVE_E_NOMEM.  A failing callback returns
 * its SIVE_E_* status with its message (sive_result_errmsg()).
 */
SIVE_API int sive_mlp_model(sive_model *out, const sive_mlp *m,
                            const sive_dataset *train, int blis_threads);

/* ------------------------------------------------------------------ */
/* Checkpoints                                                        */
/* ------------------------------------------------------------------ */

/** Metadata stored with a checkpoint.  Unknown losses are NaN. */
typedef struct sive_checkpoint_meta {
    int64_t epoch;     /* training epoch the parameters belong to */
    uint64_t seed;     /* seed of the training run                */
    double train_loss; /* mean training loss at that point        */
    double test_loss;  /* mean test loss at that point            */
} sive_checkpoint_meta;

/** Version of the checkpoint file format this library writes and reads. */
#define SIVE_CHECKPOINT_VERSION 1

/**
 * Write theta (sive_mlp_dim(m) floats) and meta (NULL: epoch 0, seed 0,
 * NaN losses) to path.
 *
 * Format version 1 (integers little-endian, FNV-1a 64 with the standard
 * offset basis 0xcbf29ce484222325 and prime 0x100000001b3):
 *
 *   1. one zstd frame, with content size and content checksum, of
 *        off  0  "SIVECKPT"                               8 bytes
 *             8  format version = 1                       u32
 *            12  data type = 1 (float32 little-endian)    u32
 *            16  in, h1, h2, classes                      4 x u64
 *            48  epoch                                    i64
 *            56  seed                                     u64
 *            64  train_loss, test_loss                    2 x IEEE f64
 *            80  parameter count P                        u64
 *            88  the P parameters (theta's layout)        P x f32
 *        88+4P  FNV-1a 64 of the 88+4P bytes before it    u64
 *   2. a zstd skippable frame: u32 0x184D2A53, u32 12, "SIVE", then the
 *      u64 FNV-1a 64 of every byte of frame 1.
 *
 * `zstd -d` decodes the file to the payload of frame 1.
 *
 * The write is atomic: the data go to a temporary file "<path>.tmp.XXXXXX"
 * in the same directory, which is flushed to disk (fsync) and renamed over
 * path, and the directory is then flushed, so a crash leaves either the old
 * file or the new one.  The new file has mode 0644.  A temporary file that
 * a killed save left behind is removed by a later save of the same path
 * once it has not been modified for 10 minutes and no process holds its
 * lock (every writer keeps an flock() on its temporary until the rename);
 * other files are never touched.  Thread-safe (distinct paths).  Errors:
 * SIVE_E_INVALID_ARG (also: path empty or ending in '/'), SIVE_E_NOMEM,
 * SIVE_E_IO (the message names the file, shortened in the middle when long
 * so that the system error always fits, and says when the temporary name
 * is the one that is too long; no temporary file is left behind).
 */
SIVE_API int sive_checkpoint_save(const char *path, const sive_mlp *m,
                                  const float *theta,
                                  const sive_checkpoint_meta *meta);

/**
 * Read a checkpoint.  On success *mlp_out is a new architecture (free with
 * sive_mlp_free()), *theta_out a new array of sive_mlp_dim(*mlp_out)
 * floats (free with sive_free()) and *meta_out (may be NULL) the metadata.
 * On failure both pointers are set to NULL.
 *
 * Every check names the file in its message.  Errors: SIVE_E_INVALID_ARG,
 * SIVE_E_NOMEM, SIVE_E_IO (cannot open or read), SIVE_E_FORMAT (not a
 * checkpoint, truncated, any corrupted byte, unsupported version or data
 * type, invalid or oversized layer sizes, parameter count that does not
 * match the sizes).  Thread-safe.
 */
SIVE_API int sive_checkpoint_load(const char *path, sive_mlp **mlp_out,
                                  float **theta_out,
                                  sive_checkpoint_meta *meta_out);

/**
 * The bytes sive_checkpoint_save() would write to a file, in memory (for a
 * message between processes, a database, an object store).  *bytes
 * receives a new buffer of *len bytes (free with sive_free()); both are
 * NULL/0 on failure.  meta as in sive_checkpoint_save().  The bytes are the
 * file's, bit for bit: a file written by sive_checkpoint_save() reads back
 * with sive_checkpoint_from_bytes() and these bytes saved to a file read
 * back with sive_checkpoint_load().  Thread-safe: m and theta are only
 * read.  Errors (sive_last_errmsg()): SIVE_E_INVALID_ARG (NULL argument),
 * SIVE_E_NOMEM.
 */
SIVE_API int sive_checkpoint_to_bytes(const sive_mlp *m, const float *theta,
                                      const sive_checkpoint_meta *meta,
                                      void **bytes, size_t *len);

/**
 * A checkpoint from len bytes written by sive_checkpoint_to_bytes() or read
 * from a checkpoint file: the checks of sive_checkpoint_load() (trailer
 * checksum over the whole buffer first, then zstd's checksum, the header
 * and the payload hash), so damaged, truncated or foreign bytes are
 * SIVE_E_FORMAT, never a wrong model (0 bytes too: bytes may then be NULL).
 * Memory grows with what the frame really holds, not with what its header
 * claims.  bytes is only read and may be freed afterwards.  *mlp_out,
 * *theta_out and meta_out as in sive_checkpoint_load(); messages name
 * "checkpoint bytes".  Thread-safe.  Errors (sive_last_errmsg()):
 * SIVE_E_INVALID_ARG (NULL output, or NULL bytes with len > 0),
 * SIVE_E_NOMEM, SIVE_E_FORMAT.
 */
SIVE_API int sive_checkpoint_from_bytes(const void *bytes, size_t len,
                                        sive_mlp **mlp_out, float **theta_out,
                                        sive_checkpoint_meta *meta_out);

/* sive_free(), which frees sive_checkpoint_load()'s parameters, is declared
 * in sive.h (included above). */

#ifdef __cplusplus
}
#endif

#endif /* SIVE_MLP_H */
