/* IDX reader on hostile file bytes (any compression), from memory files.
 *
 * Input: u16 little-endian L, then L bytes of the label file, then the
 * image file (both as stored on disk: plain, gzip or zstd, detected by the
 * library from their first bytes).  The two are handed to
 * sive_dataset_load_idx() as memfd files (no file system involved).
 *
 * Oracle: both files are decoded independently (zlib / libzstd driven by
 * fuzz_common.h, IDX parsed from data.h's description).  The library must
 * accept exactly the pairs the reference accepts, with the same
 * dimensions, pixels, labels and class count, and reject the others with
 * SIVE_E_FORMAT, a message and a NULL handle. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static memfile img, lab;
    if (!img.path[0]) {
        memfile_open(&img, "images");
        memfile_open(&lab, "labels");
    }
    if (size < 2)
        return 0;
    size_t nl = (size_t)data[0] | (size_t)data[1] << 8;
    if (nl > size - 2)
        nl = size - 2;
    const uint8_t *l = data + 2, *i = l + nl;
    size_t ni = size - 2 - nl;

    ref_pair r;
    if (ref_pair_make(&r, i, ni, l, nl, 0) == REF_BIG) {
        ref_pair_free(&r);
        return 0;
    }
    memfile_set(&img, i, ni);
    memfile_set(&lab, l, nl);
    sive_dataset *ds = (sive_dataset *)1;
    int rc = sive_dataset_load_idx(&ds, img.path, lab.path);
    fuzz_trace("memory", rc, r.verdict);
    if (rc == SIVE_OK) {
        ORACLE(r.verdict == REF_OK, "invalid pair accepted");
        check_dataset(ds, &r, "memory");
        sive_dataset_free(ds);
    } else if (rc != SIVE_E_NOMEM) {
        ORACLE(r.verdict == REF_BAD, "valid pair rejected (status %d)", rc);
        check_rejected(rc, SIVE_E_FORMAT, ds, "memory");
        ORACLE(strstr(sive_last_errmsg(), img.path) ||
                   strstr(sive_last_errmsg(), lab.path),
               "the message names neither file");
    }
    ref_pair_free(&r);
    return 0;
}
