/* The MNIST directory opener on hostile directories.
 *
 * Input: a mode byte (bit 0: the four official files, else the bundled
 * subset's two), one byte per file (bit 0: leave the file out; bit 1: the
 * dotted name "...-images.idx3-ubyte"; bits 2-3: suffix "", ".zst", ".gz"),
 * then the files' bytes: each but the last preceded by its u16
 * little-endian length, the last taking the rest.  The files are written
 * into an otherwise empty temporary directory, which is given to
 * sive_dataset_open_dir().
 *
 * Oracle: which set the directory holds (all four official files, some of
 * them, both subset files, one, none) fixes the expected status from
 * data.h; the files are decoded independently; the official set must come
 * back file for file, and the subset as sive_dataset_split(all,
 * SIVE_DATASET_SUBSET_TEST, SIVE_DATASET_SUBSET_SEED) of the reference
 * data (the split itself is checked against an independent implementation
 * in test/test_data.c). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[6][2] = {
    {"train-images-idx3-ubyte", "train-images.idx3-ubyte"},
    {"train-labels-idx1-ubyte", "train-labels.idx1-ubyte"},
    {"t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"},
    {"t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"},
    {"mnist-10k-images-idx3-ubyte", "mnist-10k-images.idx3-ubyte"},
    {"mnist-10k-labels-idx1-ubyte", "mnist-10k-labels.idx1-ubyte"},
};
static const char *const suffixes[4] = {"", ".zst", ".gz", ""};

/* The library's data set equals the reference's (another data set). */
static void same_dataset(const sive_dataset *a, const sive_dataset *b,
                         const char *what)
{
    ORACLE(a && b, "%s: missing", what);
    size_t n = sive_dataset_count(a), r = sive_dataset_rows(a),
           c = sive_dataset_cols(a);
    ORACLE(n == sive_dataset_count(b) && r == sive_dataset_rows(b) &&
               c == sive_dataset_cols(b),
           "%s: %zu x %zu x %zu, reference %zu x %zu x %zu", what, n, r, c,
           sive_dataset_count(b), sive_dataset_rows(b), sive_dataset_cols(b));
    ORACLE(memcmp(sive_dataset_pixels(a), sive_dataset_pixels(b), n * r * c) ==
               0,
           "%s: pixels differ", what);
    ORACLE(memcmp(sive_dataset_labels(a), sive_dataset_labels(b), n) == 0,
           "%s: labels differ", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *written[6];
    for (int k = 0; k < 6; k++)
        if (written[k]) {
            unlink(written[k]);
            written[k] = NULL;
        }
    if (size < 1)
        return 0;
    int official = data[0] & 1;
    int first = official ? 0 : 4, nroles = official ? 4 : 2;
    if (size < 1 + (size_t)nroles)
        return 0;
    const uint8_t *flags = data + 1, *p = data + 1 + nroles;
    size_t left = size - 1 - (size_t)nroles;
    const uint8_t *file[4];
    size_t len[4];
    int present = 0;
    for (int k = 0; k < nroles; k++) {
        size_t n = left;
        if (k + 1 < nroles) {
            n = left >= 2 ? ((size_t)p[0] | (size_t)p[1] << 8) : 0;
            size_t skip = left >= 2 ? 2 : left;
            p += skip;
            left -= skip;
            if (n > left)
                n = left;
        }
        file[k] = p;
        len[k] = n;
        p += n;
        left -= n;
        if (flags[k] & 1)
            continue; /* left out */
        char name[64];
        snprintf(name, sizeof name, "%s%s", names[first + k][(flags[k] >> 1) & 1],
                 suffixes[(flags[k] >> 2) & 3]);
        written[k] = fuzz_tmp_track(name);
        write_file(written[k], file[k], len[k]);
        present++;
    }

    /* what data.h promises for this directory */
    ref_pair r[2];
    int npairs = present == nroles ? nroles / 2 : 0, want = SIVE_E_IO;
    for (int k = 0; k < npairs; k++)
        if (ref_pair_make(&r[k], file[2 * k], len[2 * k], file[2 * k + 1],
                          len[2 * k + 1], 0) == REF_BIG) {
            for (int j = 0; j <= k; j++)
                ref_pair_free(&r[j]);
            return 0;
        }
    if (npairs) {
        want = SIVE_OK;
        for (int k = 0; k < npairs; k++)
            if (r[k].verdict != REF_OK)
                want = SIVE_E_FORMAT;
        if (want == SIVE_OK && official &&
            (r[0].i.dims[1] != r[1].i.dims[1] ||
             r[0].i.dims[2] != r[1].i.dims[2]))
            want = SIVE_E_FORMAT;
        if (want == SIVE_OK && !official &&
            r[0].i.dims[0] <= SIVE_DATASET_SUBSET_TEST)
            want = SIVE_E_FORMAT;
    }

    sive_dataset *tr = (sive_dataset *)1, *te = (sive_dataset *)1;
    int rc = sive_dataset_open_dir(fuzz_tmp(), &tr, &te);
    fuzz_trace(official ? "open_dir official" : "open_dir subset", rc,
               want == SIVE_OK ? REF_OK : REF_BAD);
    if (rc == SIVE_OK) {
        ORACLE(want == SIVE_OK, "accepted, expected status %d", want);
        if (official) {
            check_dataset(tr, &r[0], "official train");
            check_dataset(te, &r[1], "official test");
        } else {
            sive_dataset *all, *etr, *ete;
            const ref_idx *i = &r[0].i;
            ORACLE(sive_dataset_from_memory(&all, i->data, r[0].l.data,
                                            i->dims[0], i->dims[1],
                                            i->dims[2]) == SIVE_OK,
                   "reference data set");
            ORACLE(sive_dataset_split(all, SIVE_DATASET_SUBSET_TEST,
                                      SIVE_DATASET_SUBSET_SEED, &etr,
                                      &ete) == SIVE_OK,
                   "reference split");
            same_dataset(tr, etr, "subset train");
            same_dataset(te, ete, "subset test");
            sive_dataset_free(all);
            sive_dataset_free(etr);
            sive_dataset_free(ete);
        }
        sive_dataset_free(tr);
        sive_dataset_free(te);
    } else if (rc != SIVE_E_NOMEM) {
        ORACLE(want != SIVE_OK, "valid directory rejected (status %d)", rc);
        check_rejected(rc, want, tr, "open_dir");
        ORACLE(te == NULL, "test set not NULL after a failure");
    }
    for (int k = 0; k < npairs; k++)
        ref_pair_free(&r[k]);
    return 0;
}
