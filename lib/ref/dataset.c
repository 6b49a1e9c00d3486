/*
 * Data-set operations built on the public handle API: the deterministic
 * class-balanced split and the MNIST directory layouts.
 */
#include "fileio.h"
#include "internal.h"
#include "sive/data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ */
/* Split                                                              */
/* ------------------------------------------------------------------ */

/* splitmix64 (Steele, Lea, Flood 2014): tiny, and trivially reproduced in
 * other languages, which matters because the split is part of the data. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, n): reject the 2^64 mod n lowest values, then reduce. */
static uint64_t uniform_below(uint64_t *state, uint64_t n)
{
    uint64_t threshold = (0 - n) % n; /* == 2^64 mod n */
    for (;;) {
        uint64_t x = splitmix64(state);
        if (x >= threshold)
            return x % n;
    }
}

/* Test examples per class: rounded shares, corrected to sum to n_test. */
static void class_quotas(const size_t *counts, size_t total, size_t n_test,
                         size_t *quota)
{
    size_t sum = 0;
    for (int c = 0; c < 256; c++) {
        /* round half up; n_test, counts <= 2^24 so this fits in 64 bits */
        quota[c] = (size_t)((2 * (uint64_t)n_test * counts[c] + total) /
                            (2 * (uint64_t)total));
        sum += quota[c];
    }
    /* dev_c = total * (quota_c - exact share), exact in integers. */
    while (sum != n_test) {
        int best = -1;
        int64_t best_dev = 0;
        for (int c = 0; c < 256; c++) {
            int64_t dev = (int64_t)quota[c] * (int64_t)total -
                          (int64_t)n_test * (int64_t)counts[c];
            if (sum > n_test ? quota[c] == 0 : quota[c] >= counts[c])
                continue;
            if (best < 0 || (sum > n_test ? dev > best_dev : dev < best_dev)) {
                best = c;
                best_dev = dev;
            }
        }
        if (sum > n_test) {
            quota[best]--;
            sum--;
        } else {
            quota[best]++;
            sum++;
        }
    }
}

int sive_dataset_split(const sive_dataset *all, size_t n_test, uint64_t seed,
                       sive_dataset **train, sive_dataset **test)
{
    if (train)
        *train = NULL;
    if (test)
        *test = NULL;
    if (!all || !train || !test)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_split: NULL argument");
    size_t total = sive_dataset_count(all);
    if (n_test == 0 || n_test >= total)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_split: n_test = %zu, must be in "
                         "[1, %zu] for %zu examples", n_test,
                         total ? total - 1 : 0, total);
    const uint8_t *labels = sive_dataset_labels(all);
    const uint8_t *pixels = sive_dataset_pixels(all);
    size_t px = sive_dataset_rows(all) * sive_dataset_cols(all);
    size_t n_train = total - n_test;

    size_t counts[256] = {0}, quota[256], taken[256] = {0};
    for (size_t i = 0; i < total; i++)
        counts[labels[i]]++;
    class_quotas(counts, total, n_test, quota);

    size_t *perm = malloc(total * sizeof *perm);
    uint8_t *tr_px = malloc(n_train * px), *tr_lb = malloc(n_train);
    uint8_t *te_px = malloc(n_test * px), *te_lb = malloc(n_test);
    int rc = SIVE_OK;
    if (!perm || !tr_px || !tr_lb || !te_px || !te_lb) {
        rc = sivei_fail(NULL, SIVE_E_NOMEM, "sive_dataset_split: out of memory");
        goto done;
    }
    for (size_t i = 0; i < total; i++)
        perm[i] = i;
    uint64_t state = seed;
    for (size_t i = total - 1; i > 0; i--) {
        size_t j = (size_t)uniform_below(&state, (uint64_t)i + 1);
        size_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    size_t ntr = 0, nte = 0;
    for (size_t p = 0; p < total; p++) {
        size_t k = perm[p];
        uint8_t c = labels[k];
        if (taken[c] < quota[c]) {
            taken[c]++;
            memcpy(te_px + nte * px, pixels + k * px, px);
            te_lb[nte++] = c;
        } else {
            memcpy(tr_px + ntr * px, pixels + k * px, px);
            tr_lb[ntr++] = c;
        }
    }
    rc = sive_dataset_from_memory(train, tr_px, tr_lb, n_train,
                                  sive_dataset_rows(all),
                                  sive_dataset_cols(all));
    if (!rc)
        rc = sive_dataset_from_memory(test, te_px, te_lb, n_test,
                                      sive_dataset_rows(all),
                                      sive_dataset_cols(all));
    if (rc) {
        sive_dataset_free(*train);
        *train = NULL;
    }
done:
    free(perm);
    free(tr_px);
    free(tr_lb);
    free(te_px);
    free(te_lb);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Directories                                                        */
/* ------------------------------------------------------------------ */

/* Name variants of one file: "-idx" as published, ".idx" as some mirrors
 * (and unzip tools) spell it. */
typedef struct mnist_name {
    const char *plain, *dotted;
} mnist_name;

static const mnist_name official[4] = {
    {"train-images-idx3-ubyte", "train-images.idx3-ubyte"},
    {"train-labels-idx1-ubyte", "train-labels.idx1-ubyte"},
    {"t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"},
    {"t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"},
};
static const mnist_name subset[2] = {
    {"mnist-10k-images-idx3-ubyte", "mnist-10k-images.idx3-ubyte"},
    {"mnist-10k-labels-idx1-ubyte", "mnist-10k-labels.idx1-ubyte"},
};
/* Plain first (fastest), then zstd, then gzip. */
static const char *const suffixes[3] = {"", ".zst", ".gz"};

/* dir "/" name suffix, newly allocated (NULL when out of memory). */
static char *join_path(const char *dir, const char *name, const char *suffix)
{
    size_t d = strlen(dir), n = strlen(name), s = strlen(suffix);
    int slash = d > 0 && dir[d - 1] != '/';
    char *p = malloc(d + (size_t)slash + n + s + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, d);
    if (slash)
        p[d] = '/';
    memcpy(p + d + slash, name, n);
    memcpy(p + d + slash + n, suffix, s + 1);
    return p;
}

/* *path = the first existing non-directory variant of name in dir, or NULL.
 * Returns SIVE_OK or SIVE_E_NOMEM. */
static int find_file(const char *dir, const mnist_name *name, char **path)
{
    const char *bases[2] = {name->plain, name->dotted};
    *path = NULL;
    for (int b = 0; b < 2; b++)
        for (int s = 0; s < 3; s++) {
            char *p = join_path(dir, bases[b], suffixes[s]);
            struct stat st;
            if (!p)
                return sivei_fail(NULL, SIVE_E_NOMEM,
                                 "sive_dataset_open_dir: out of memory");
            if (stat(p, &st) == 0 && !S_ISDIR(st.st_mode)) {
                *path = p;
                return SIVE_OK;
            }
            free(p);
        }
    return SIVE_OK;
}

/* Look up n names; *found = how many exist, *missing = first absent one. */
static int find_all(const char *dir, const mnist_name *names, int n,
                    char **paths, int *found, int *missing)
{
    *found = 0;
    *missing = -1;
    for (int i = 0; i < n; i++) {
        int rc = find_file(dir, &names[i], &paths[i]);
        if (rc)
            return rc;
        if (paths[i])
            ++*found;
        else if (*missing < 0)
            *missing = i;
    }
    return SIVE_OK;
}

static int partial_set(const char *dir, const mnist_name *names, int n,
                       char **paths, int missing)
{
    int have = 0;
    while (have < n && !paths[have])
        have++;
    char shown[SIVEI_PATH_SHOWN];
    return sivei_fail(NULL, SIVE_E_IO,
                     "%s: holds %s but no %s (nor its .zst or .gz form): "
                     "the set needs all %d files",
                     sivei_path_shown(shown, sizeof shown, dir),
                     names[have].plain,
                     names[missing].plain, n);
}

static int open_official(char **paths, sive_dataset **train,
                         sive_dataset **test)
{
    int rc = sive_dataset_load_idx(train, paths[0], paths[1]);
    if (!rc)
        rc = sive_dataset_load_idx(test, paths[2], paths[3]);
    char s0[SIVEI_PATH_SHOWN], s2[SIVEI_PATH_SHOWN];
    if (!rc && (sive_dataset_rows(*train) != sive_dataset_rows(*test) ||
                sive_dataset_cols(*train) != sive_dataset_cols(*test)))
        rc = sivei_fail(NULL, SIVE_E_FORMAT,
                       "%s holds %zu x %zu images but %s holds %zu x %zu",
                       sivei_path_shown(s0, sizeof s0, paths[0]),
                       sive_dataset_rows(*train), sive_dataset_cols(*train),
                       sivei_path_shown(s2, sizeof s2, paths[2]),
                       sive_dataset_rows(*test), sive_dataset_cols(*test));
    return rc;
}

static int open_subset(char **paths, sive_dataset **train,
                       sive_dataset **test)
{
    sive_dataset *all = NULL;
    int rc = sive_dataset_load_idx(&all, paths[0], paths[1]);
    if (rc)
        return rc;
    char shown[SIVEI_PATH_SHOWN];
    if (sive_dataset_count(all) <= SIVE_DATASET_SUBSET_TEST)
        rc = sivei_fail(NULL, SIVE_E_FORMAT,
                       "%s: %zu images, the fixed split needs more than %d",
                       sivei_path_shown(shown, sizeof shown, paths[0]),
                       sive_dataset_count(all),
                       SIVE_DATASET_SUBSET_TEST);
    else
        rc = sive_dataset_split(all, SIVE_DATASET_SUBSET_TEST,
                                SIVE_DATASET_SUBSET_SEED, train, test);
    sive_dataset_free(all);
    return rc;
}

int sive_dataset_open_dir(const char *dir, sive_dataset **train,
                          sive_dataset **test)
{
    if (train)
        *train = NULL;
    if (test)
        *test = NULL;
    if (!dir || !train || !test)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_open_dir: NULL argument");
    struct stat st;
    char shown[SIVEI_PATH_SHOWN], eb[SIVEI_STRERROR_LEN];
    sivei_path_shown(shown, sizeof shown, dir);
    if (stat(dir, &st) != 0)
        return sivei_fail(NULL, SIVE_E_IO, "%s: %s", shown,
                         sivei_strerror(errno, eb, sizeof eb));
    if (!S_ISDIR(st.st_mode))
        return sivei_fail(NULL, SIVE_E_IO, "%s: not a directory", shown);

    char *off[4] = {NULL}, *sub[2] = {NULL};
    int n_off, n_sub, miss_off, miss_sub;
    int rc = find_all(dir, official, 4, off, &n_off, &miss_off);
    if (!rc)
        rc = find_all(dir, subset, 2, sub, &n_sub, &miss_sub);
    if (rc)
        goto done;
    if (n_off == 4)
        rc = open_official(off, train, test);
    else if (n_off > 0)
        rc = partial_set(dir, official, 4, off, miss_off);
    else if (n_sub == 2)
        rc = open_subset(sub, train, test);
    else if (n_sub > 0)
        rc = partial_set(dir, subset, 2, sub, miss_sub);
    else
        rc = sivei_fail(NULL, SIVE_E_IO,
                       "%s: no MNIST files: expected train-images-idx3-ubyte, "
                       "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                       "t10k-labels-idx1-ubyte, or the bundled "
                       "mnist-10k-images-idx3-ubyte and "
                       "mnist-10k-labels-idx1-ubyte (each optionally .zst or "
                       ".gz)", shown);
done:
    for (int i = 0; i < 4; i++)
        free(off[i]);
    for (int i = 0; i < 2; i++)
        free(sub[i]);
    if (rc) {
        sive_dataset_free(*train);
        sive_dataset_free(*test);
        *train = *test = NULL;
    }
    return rc;
}

uint64_t sive_dataset_hash(const sive_dataset *ds)
{
    if (!ds)
        return 0;
    const size_t n = sive_dataset_count(ds), px = sive_dataset_rows(ds) * sive_dataset_cols(ds);
    const uint64_t dims[3] = {n, sive_dataset_rows(ds), sive_dataset_cols(ds)};
    uint8_t head[24];
    for (int i = 0; i < 24; i++)
        head[i] = (uint8_t)(dims[i / 8] >> (8 * (i % 8)));
    uint64_t h = sivei_hash_words(0xcbf29ce484222325ull, head, sizeof head);
    h = sivei_hash_words(h, sive_dataset_pixels(ds), n * px);
    h = sivei_hash_words(h, sive_dataset_labels(ds), n);
    return h ? h : 1; /* 0 means "no identity" in sive_model */
}
