/*
 * libsive - data sets: IDX image/label files (raw, gzip, zstd) and the
 * bundled MNIST subset.
 *
 * A data set is an immutable, opaque handle holding count images of
 * rows x cols unsigned bytes (row-major, one image after the other) and one
 * unsigned-byte label per image.  Handles are created by the loaders below,
 * by sive_dataset_from_memory() or by sive_dataset_split(), and released
 * with sive_dataset_free().
 *
 * IDX files (the format of the MNIST distribution) are a big-endian header
 * - bytes 0, 0, an element type, the number of dimensions n, then n uint32
 * sizes - followed by the elements.  libsive reads element type 0x08
 * (unsigned byte) only: images with 3 dimensions (count x rows x cols) and
 * labels with 1 (count).  The compression is detected from the first bytes
 * of the file, never from its name: 28 b5 2f fd (or a skippable frame) is
 * zstd, 1f 8b is gzip (needs zlib at build time), 00 00 is plain IDX.
 * Concatenated zstd frames and gzip members are accepted.
 *
 * Limits (SIVE_E_FORMAT beyond them, checked before any allocation): every
 * dimension is in [1, 2^24] and a file's payload is at most 2^32 bytes.
 * Memory grows with the data actually decoded, never with the size a header
 * claims, and decompression stops at the first byte past the payload the
 * header announces, so a hostile file cannot make the loader allocate or
 * decode much more than it really holds.
 *
 * Errors: every function that can fail returns SIVE_OK or a negative
 * SIVE_E_* code and leaves a message naming the file and the problem in
 * sive_last_errmsg() (thread-local), for example
 *   "images.idx: truncated: header says 10000 x 28 x 28 = 7840000 bytes,
 *    file holds 123".
 * Nothing is ever printed.
 *
 * Thread safety: a data set is never modified after construction, so one
 * handle may be read from any number of threads at once (the pixels and
 * labels pointers included).  All functions are reentrant; freeing a handle
 * must of course not race with its readers.
 */
#ifndef SIVE_DATA_H
#define SIVE_DATA_H

#include "sive/sive.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sive_dataset sive_dataset;

/** Largest accepted dimension of an IDX file or in-memory data set. */
#define SIVE_DATASET_MAX_DIM 16777216        /* 2^24 */
/** Largest accepted payload (count*rows*cols bytes): 2^32. */
#define SIVE_DATASET_MAX_BYTES 4294967296
/** Test-set size sive_dataset_open_dir() takes from the bundled subset. */
#define SIVE_DATASET_SUBSET_TEST 2000
/** Seed sive_dataset_open_dir() passes to sive_dataset_split() for the
 *  bundled subset (fixed forever: the split is part of the data set). */
#define SIVE_DATASET_SUBSET_SEED 42

/**
 * Load an IDX image file (ubyte, 3 dims: count x rows x cols) and the
 * matching IDX label file (ubyte, 1 dim: count; any value 0..255 is
 * accepted).  Each file may be plain, gzip- or zstd-compressed, detected by
 * its magic bytes.
 *
 * On success *out is a new handle the caller frees with sive_dataset_free().
 * On failure *out is NULL (when out is not NULL) and:
 *   SIVE_E_INVALID_ARG  a NULL argument;
 *   SIVE_E_IO           a file cannot be opened or read (the message names
 *                       the file and gives strerror, e.g. a directory);
 *   SIVE_E_FORMAT       bad magic; element type other than 0x08; wrong
 *                       number of dimensions (e.g. a label file given as
 *                       images); a zero or oversized dimension; a truncated
 *                       header or payload; bytes after the payload; a
 *                       corrupted or truncated compressed stream; image and
 *                       label counts that differ;
 *   SIVE_E_UNSUPPORTED  a gzip file in a build without zlib;
 *   SIVE_E_NOMEM        allocation failed.
 */
SIVE_API int sive_dataset_load_idx(sive_dataset **out, const char *images_path,
                                   const char *labels_path);

/**
 * Open a directory holding MNIST.
 *
 * If it holds the four official files
 *   train-images-idx3-ubyte  train-labels-idx1-ubyte
 *   t10k-images-idx3-ubyte   t10k-labels-idx1-ubyte
 * (each may also be named with a '.' instead of the first '-' after
 * "images"/"labels", e.g. train-images.idx3-ubyte, and may carry a .zst or
 * .gz suffix; for each file the first existing of: plain, .zst, .gz, is
 * used), *train and *test are the official sets.  Otherwise, if it holds the
 * bundled subset mnist-10k-images-idx3-ubyte and mnist-10k-labels-idx1-ubyte
 * (same suffix rules), the subset is split with
 *   sive_dataset_split(all, SIVE_DATASET_SUBSET_TEST,
 *                      SIVE_DATASET_SUBSET_SEED, train, test),
 * which gives 8000 training and 2000 test images for the bundled files.
 *
 * On success *train and *test are new handles the caller frees.  On failure
 * both are NULL (when not NULL themselves) and the status is that of the
 * failing load, or SIVE_E_INVALID_ARG (NULL argument), SIVE_E_IO (dir does
 * not exist or is not a directory; it holds neither set; it holds only some
 * of the official files - the message names the missing one),
 * SIVE_E_FORMAT (training and test images differ in size; the subset holds
 * no more than SIVE_DATASET_SUBSET_TEST images), SIVE_E_NOMEM.
 */
SIVE_API int sive_dataset_open_dir(const char *dir, sive_dataset **train,
                                   sive_dataset **test);

/**
 * Deterministic class-balanced split of all into two new handles (copies;
 * all is only read).
 *
 * Class c receives k_c = round(n_test * count_c / total) test examples
 * (halves round up).  While the k_c sum to more than n_test, one is taken
 * from the class with the largest k_c*total - n_test*count_c (ties: lowest
 * class, k_c > 0); while they sum to less, one is given to the class with
 * the smallest such value (ties: lowest class, k_c < count_c).
 *
 * The examples are then visited in the order of a seeded permutation of
 * 0..total-1: Fisher-Yates from i = total-1 down to 1, swapping i with
 * j = x mod (i+1), where x is the next output of splitmix64 started at
 * state = seed, drawing again while x < 2^64 mod (i+1).  A visited example
 * of class c goes to test while fewer than k_c of its class went there, and
 * to train otherwise.  Both outputs keep the permutation order (so they are
 * shuffled), and the result depends only on (labels, n_test, seed).
 *
 * Errors: SIVE_E_INVALID_ARG (NULL pointer, n_test == 0 or
 * n_test >= count: both parts must be non-empty), SIVE_E_NOMEM.  On failure
 * *train and *test are NULL.
 */
SIVE_API int sive_dataset_split(const sive_dataset *all, size_t n_test,
                                uint64_t seed, sive_dataset **train,
                                sive_dataset **test);

/** Free a data set (NULL is a no-op).  Pointers obtained from
 *  sive_dataset_pixels()/labels() become invalid. */
SIVE_API void sive_dataset_free(sive_dataset *ds);

/** Number of images (0 if ds is NULL). */
SIVE_API size_t sive_dataset_count(const sive_dataset *ds);
/** Rows of every image (0 if ds is NULL). */
SIVE_API size_t sive_dataset_rows(const sive_dataset *ds);
/** Columns of every image (0 if ds is NULL). */
SIVE_API size_t sive_dataset_cols(const sive_dataset *ds);

/**
 * The count*rows*cols pixel bytes, image after image, each image row-major.
 * Owned by ds (read-only, valid until sive_dataset_free); NULL if ds is NULL.
 */
SIVE_API const uint8_t *sive_dataset_pixels(const sive_dataset *ds);
/** The count labels; owned by ds like the pixels.  NULL if ds is NULL. */
SIVE_API const uint8_t *sive_dataset_labels(const sive_dataset *ds);

/** Number of classes: 1 + the largest label (0 if ds is NULL). */
SIVE_API size_t sive_dataset_classes(const sive_dataset *ds);

/**
 * A 64-bit hash of the data set's content: its count, rows, cols, every
 * pixel and every label (0 if ds is NULL).  Equal data sets hash equal in
 * every process and on every little- or big-endian machine; different
 * ones differ but for a 2^-64 accident.  It detects a mix-up (parts of a
 * split run probed on different data), not an adversary: it is not a
 * cryptographic hash.  One pass over every byte of the data set (a
 * multiply per 8 bytes); thread-safe.
 */
SIVE_API uint64_t sive_dataset_hash(const sive_dataset *ds);

/**
 * Build a data set from caller memory: count*rows*cols pixel bytes and count
 * labels, both copied (the caller keeps ownership of its buffers).
 * Errors: SIVE_E_INVALID_ARG (NULL pointer, a dimension of 0 or above
 * SIVE_DATASET_MAX_DIM, more than SIVE_DATASET_MAX_BYTES pixel bytes),
 * SIVE_E_NOMEM.  On failure *out is NULL.
 */
SIVE_API int sive_dataset_from_memory(sive_dataset **out,
                                      const uint8_t *pixels,
                                      const uint8_t *labels, size_t count,
                                      size_t rows, size_t cols);

/**
 * Write ds as an IDX image file and an IDX label file.  zstd_level 0 writes
 * plain IDX; 1..22 (the zstd levels) writes one zstd frame with the content
 * size and a checksum.  Each file is written to a temporary file
 * "<path>.tmp.XXXXXX" in the same directory (mode 0644), flushed to disk,
 * and renamed over its path only after both were written, so a reader never
 * sees a partial file (the two renames are not one atomic step); the
 * directory is then flushed so that the renames survive a crash.
 *
 * The two paths must name different files: two spellings of one name
 * ("x.idx" and "./x.idx", or through a symlinked directory) and a path that
 * is a symbolic or hard link to the other file are rejected before anything
 * is written.
 *
 * A temporary file that a killed save left behind is removed by a later
 * save of the same path, once it has not been modified for 10 minutes and
 * no process holds its lock (every writer keeps an flock() on its
 * temporary until the rename); other files are never touched.
 *
 * Errors: SIVE_E_INVALID_ARG (NULL pointer, paths naming the same file,
 * level outside 0..22), SIVE_E_IO (temporary file, write, flush or rename
 * failed: the message names the file, shortened in the middle when long so
 * that the system's reason always fits, and says when the temporary name
 * is the one that is too long; no temporary is left behind), SIVE_E_NOMEM.
 */
SIVE_API int sive_dataset_save_idx(const sive_dataset *ds,
                                   const char *images_path,
                                   const char *labels_path, int zstd_level);

#ifdef __cplusplus
}
#endif

#endif /* SIVE_DATA_H */
