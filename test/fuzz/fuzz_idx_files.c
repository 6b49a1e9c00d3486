/* IDX reader through its three decoders, from files on disk.
 *
 * Input: one mode byte, u16 little-endian L, then L bytes of a decoded IDX
 * label file, then a decoded IDX image file.  The target writes each as a
 * plain file, a gzip file (.gz, zlib) and a zstd file (.zst, with content
 * size and checksum) in a temporary directory - mode bit 0 splits each
 * compressed file into two gzip members / zstd frames at the middle of its
 * data - and loads the three pairs with sive_dataset_load_idx().
 *
 * Oracle: the three loads agree (same status; on success the same data),
 * and each agrees with the reference parse of the bytes it encodes: the
 * IDX parsed directly for .gz and .zst, and for the plain file the bytes
 * as the library sees them (a "plain" input that starts with a zstd or
 * gzip magic is a compressed file). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* gzip members of p[0..n), split at half when two is set. */
static void gzip_encode(buf *out, const uint8_t *p, size_t n, int two)
{
    size_t cut = two ? n / 2 : n;
    for (int part = 0; part < (two ? 2 : 1); part++) {
        const uint8_t *q = part ? p + cut : p;
        size_t m = part ? n - cut : cut;
        z_stream z;
        memset(&z, 0, sizeof z);
        if (deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) !=
            Z_OK)
            abort();
        uLong bound = deflateBound(&z, (uLong)m) + 64;
        size_t base = out->n;
        buf_reserve(out, bound);
        z.next_in = (Bytef *)(uintptr_t)q;
        z.avail_in = (uInt)m;
        z.next_out = out->p + base;
        z.avail_out = (uInt)(out->cap - base);
        if (deflate(&z, Z_FINISH) != Z_STREAM_END)
            abort();
        out->n = base + z.total_out;
        deflateEnd(&z);
    }
}

/* zstd frames (content size, checksum) of p[0..n), split when two. */
static void zstd_encode(buf *out, const uint8_t *p, size_t n, int two)
{
    size_t cut = two ? n / 2 : n;
    buf_put_zstd(out, p, cut);
    if (two)
        buf_put_zstd(out, p + cut, n - cut);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int two = data[0] & 1;
    size_t nl = (size_t)data[1] | (size_t)data[2] << 8;
    if (nl > size - 3)
        nl = size - 3;
    const uint8_t *l = data + 3, *i = l + nl;
    size_t ni = size - 3 - nl;

    static const char *const suffix[3] = {"", ".gz", ".zst"};
    const char *ip[3], *lp[3];
    for (int k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "images.idx%s", suffix[k]);
        ip[k] = fuzz_tmp_track(name);
        snprintf(name, sizeof name, "labels.idx%s", suffix[k]);
        lp[k] = fuzz_tmp_track(name);
    }
    buf enc[2] = {{0}, {0}};
    write_file(ip[0], i, ni);
    write_file(lp[0], l, nl);
    gzip_encode(&enc[0], i, ni, two);
    gzip_encode(&enc[1], l, nl, two);
    write_file(ip[1], enc[0].p, enc[0].n);
    write_file(lp[1], enc[1].p, enc[1].n);
    enc[0].n = enc[1].n = 0;
    zstd_encode(&enc[0], i, ni, two);
    zstd_encode(&enc[1], l, nl, two);
    write_file(ip[2], enc[0].p, enc[0].n);
    write_file(lp[2], enc[1].p, enc[1].n);
    buf_free(&enc[0]);
    buf_free(&enc[1]);

    ref_pair plain, decoded;
    ref_pair_make(&plain, i, ni, l, nl, 0);
    ref_pair_make(&decoded, i, ni, l, nl, 1);
    int rcs[3];
    for (int k = 0; k < 3; k++) {
        const ref_pair *r = k == 0 ? &plain : &decoded;
        if (r->verdict == REF_BIG) {
            rcs[k] = -1000;
            continue;
        }
        sive_dataset *ds = (sive_dataset *)1;
        int rc = rcs[k] = sive_dataset_load_idx(&ds, ip[k], lp[k]);
        char what[16];
        snprintf(what, sizeof what, "file%s", suffix[k]);
        fuzz_trace(what, rc, r->verdict);
        if (rc == SIVE_OK) {
            ORACLE(r->verdict == REF_OK, "%s: invalid pair accepted", what);
            check_dataset(ds, r, what);
            sive_dataset_free(ds);
        } else if (rc != SIVE_E_NOMEM) {
            ORACLE(r->verdict == REF_BAD, "%s: valid pair rejected (%d)",
                   what, rc);
            check_rejected(rc, SIVE_E_FORMAT, ds, what);
            ORACLE(strstr(sive_last_errmsg(), ip[k]) ||
                       strstr(sive_last_errmsg(), lp[k]),
                   "%s: the message names neither file", what);
        }
    }
    /* the two compressed forms of the same bytes always agree */
    ORACLE(rcs[1] == rcs[2] || rcs[1] == -1000 || rcs[2] == -1000,
           ".gz status %d, .zst status %d", rcs[1], rcs[2]);
    ref_pair_free(&plain);
    ref_pair_free(&decoded);
    return 0;
}
