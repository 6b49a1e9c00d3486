/* The result-file loader (sive_result_load, and sive_result_from_bytes on
 * the same bytes) on hostile bytes, with a load/save/merge oracle.
 *
 * Input: a mode byte, then bytes.  Mode bit 2 clear ("framed"): the bytes
 * are a payload, which the target wraps in a frame that passes every frame
 * check (magic, version 5 - (mode & 3), i.e. 5, 4, 3 or 2, or 1 when mode
 * bit 3 is set, the payload
 * length, and the FNV-1a hash, which is a checksum anyone can recompute),
 * so that mutations reach the field checks and the chain records.  Bit 2
 * set ("raw"): the bytes are the whole file, as stored.
 *
 * Oracle (docs/reliability.md, "Result files"):
 *  - a rejected file gives SIVE_E_FORMAT, NULL outputs and a message naming
 *    the file; SIVE_E_NOMEM is a failure: no field may make the loader
 *    allocate more than the file holds (tools/fuzz.sh also runs every
 *    target with -malloc_limit_mb=256, far above what a 16 KiB input can
 *    legitimately cost, so a header that sets an allocation is a crash);
 *  - sive_result_from_bytes() on the file's bytes gives the same status and
 *    the same result as the file loader, and sive_result_to_bytes() the
 *    bytes sive_result_save() writes;
 *  - an accepted file saves, and the saved file loads to the same result
 *    (every status, flag, health text, statistic and trace bit for bit) and
 *    saves to the same bytes again: load and save are inverse;
 *  - merging the result alone succeeds exactly when it holds every chain
 *    of its probe and completed (status OK or DIVERGED), and then gives
 *    the same statistics, flags and traces; otherwise it is refused with
 *    SIVE_E_INVALID_ARG and no result. */
#include "fuzz_common.h"

#include <math.h>
#define SIVE_EXPERIMENTAL
#include <sive/experimental.h>
#include <sive/sive.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Everything a caller can read of a and b agrees (the run's status and
 * message too unless merged: a merge concludes afresh). */
static void check_same(const sive_result *a, const sive_result *b, int merged)
{
    const int32_t K = sive_result_chains(a);
    ORACLE(K == sive_result_chains(b), "chains %d vs %d", (int)K, (int)sive_result_chains(b));
    ORACLE(sive_result_chains_ok(a) == sive_result_chains_ok(b), "chains_ok differ");
    ORACLE(sive_result_dtype(a) == sive_result_dtype(b), "dtype differs");
    ORACLE(sive_result_flags(a) == sive_result_flags(b), "flags differ");
    ORACLE(strcmp(sive_result_health(a), sive_result_health(b)) == 0, "health differs");
    if (!merged) {
        ORACLE(sive_result_status(a) == sive_result_status(b), "status differs");
        ORACLE(strcmp(sive_result_errmsg(a), sive_result_errmsg(b)) == 0, "errmsg differs");
        ORACLE(sive_result_callback_code(a) == sive_result_callback_code(b), "code differs");
    }
    for (int s = 0; sive_stat_name((sive_stat)s); s++) {
        ORACLE(same_bits(sive_result_stat_std(a, (sive_stat)s),
                         sive_result_stat_std(b, (sive_stat)s)), "spread %d differs", s);
        for (int32_t c = SIVE_SUMMARY; c < K; c++)
            ORACLE(same_bits(sive_result_stat(a, (sive_stat)s, c),
                             sive_result_stat(b, (sive_stat)s, c)),
                   "stat %s of chain %d differs", sive_stat_name((sive_stat)s), (int)c);
    }
    for (int32_t c = 0; c < K; c++) {
        int64_t sa = -1, sb = -1;
        ORACLE(sive_result_chain_status(a, c, &sa) == sive_result_chain_status(b, c, &sb) &&
                   sa == sb, "chain %d status differs", (int)c);
        for (int k = 0; sive_trace_name((sive_trace)k); k++) {
            size_t na = 0, nb = 0;
            const double *ta = sive_result_trace(a, (sive_trace)k, c, &na);
            const double *tb = sive_result_trace(b, (sive_trace)k, c, &nb);
            ORACLE(na == nb && (na == 0 || memcmp(ta, tb, na * sizeof *ta) == 0),
                   "trace %d of chain %d differs", k, (int)c);
        }
    }
}

/* Invariants of any loaded result. */
static void check_shape(const sive_result *r)
{
    int32_t b = -1, e = -1;
    ORACLE(sive_result_chain_range(r, &b, &e) == SIVE_OK, "no chain range");
    const int32_t K = sive_result_chains(r);
    ORACLE(0 <= b && b < e && e <= K && K <= 4096, "range [%d, %d) of %d", (int)b, (int)e,
           (int)K);
    ORACLE(sive_result_chains_ok(r) <= e - b, "more chains ok than run");
    ORACLE(sive_result_dtype(r) == SIVE_F32 || sive_result_dtype(r) == SIVE_F64,
           "dtype %d is neither f32 nor f64", (int)sive_result_dtype(r));
    for (int32_t c = 0; c < K; c++) {
        size_t n = 0;
        sive_chain_status st = sive_result_chain_status(r, c, NULL);
        sive_result_trace(r, SIVE_TRACE_LBAR, c, &n);
        ORACLE((c >= b && c < e) == (st != SIVE_CHAIN_NOT_RUN), "chain %d: status %d",
               (int)c, (int)st);
        ORACLE(n <= (size_t)sive_result_steps(r), "chain %d: trace longer than the run",
               (int)c);
    }
}

/* The bytes of path (the target's own file). */
static buf slurp(const char *path)
{
    buf b = {0};
    FILE *f = fopen(path, "rb");
    ORACLE(f != NULL, "cannot reopen %s", path);
    uint8_t chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_put(&b, chunk, k);
    fclose(f);
    return b;
}

/* save, load back, save again: the same result and the same bytes. */
static void check_round_trip(const sive_result *r, const char *note)
{
    const char *p1 = fuzz_tmp_track("a.sres"), *p2 = fuzz_tmp_track("b.sres");
    ORACLE(sive_result_save(r, p1, note) == SIVE_OK, "a loaded result does not save");
    sive_result *back = NULL;
    char *note2 = NULL;
    ORACLE(sive_result_load(p1, &back, &note2) == SIVE_OK, "a saved result does not load");
    ORACLE(strcmp(note, note2) == 0, "note differs");
    check_same(r, back, 0);
    ORACLE(sive_result_save(back, p2, note2) == SIVE_OK, "the reloaded result does not save");
    buf a = slurp(p1), b = slurp(p2);
    ORACLE(a.n == b.n && memcmp(a.p, b.p, a.n) == 0, "save(load(save(r))) != save(r)");
    void *mem = NULL;
    size_t len = 0;
    ORACLE(sive_result_to_bytes(r, note, &mem, &len) == SIVE_OK, "to_bytes refused");
    ORACLE(len == a.n && memcmp(mem, a.p, len) == 0, "to_bytes(r) != save(r)");
    sive_free(mem);
    buf_free(&a);
    buf_free(&b);
    sive_free(note2);
    sive_result_free(back);
}

/* merge([r]) succeeds exactly for a whole, completed run, and then agrees. */
static void check_merge_alone(const sive_result *r)
{
    int32_t b = 0, e = 0;
    sive_result_chain_range(r, &b, &e);
    const int st = sive_result_status(r);
    const int whole = b == 0 && e == sive_result_chains(r) &&
                      (st == SIVE_OK || st == SIVE_E_DIVERGED);
    const sive_result *parts[1] = {r};
    sive_result *m = (sive_result *)1;
    int rc = sive_result_merge(&m, parts, 1);
    if (!whole) {
        ORACLE(rc == SIVE_E_INVALID_ARG && m == NULL, "merge of a part: status %d", rc);
        return;
    }
    ORACLE(rc == SIVE_OK, "merge of a whole run refused (status %d)", rc);
    check_same(r, m, 1);
    sive_result_free(m);
}

/* sive_result_bytes_options() (experimental.h) on the same bytes: the
 * count alone and the records agree; a file the loader accepts has
 * well-formed records, and each known one holds the value the loaded
 * result reports (rc: the loader's status, r its result). */
static void check_options(const buf *file, int rc, const sive_result *r)
{
    size_t n0 = (size_t)-1, n = (size_t)-1;
    const int r0 = sive_result_bytes_options(file->p, file->n, NULL, 0, &n0);
    ORACLE(r0 == SIVE_OK || r0 == SIVE_E_FORMAT, "bytes_options status %d", r0);
    ORACLE(r0 == SIVE_OK || n0 == 0, "bytes_options: count %zu after a failure", n0);
    if (rc == SIVE_OK)
        ORACLE(r0 == SIVE_OK, "a loaded file's option records refused: %s", sive_last_errmsg());
    if (r0 != SIVE_OK || n0 > 4096)
        return;
    sive_option_record rec[4096];
    ORACLE(sive_result_bytes_options(file->p, file->n, rec, n0, &n) == SIVE_OK && n == n0,
           "bytes_options: %zu records, then %zu", n0, n);
    for (size_t i = 0; rc == SIVE_OK && i < n; i++) {
        if (!rec[i].known)
            continue;
        int64_t iv = 0;
        double dv = 0.0;
        if (rec[i].type == SIVE_TYPE_INT)
            ORACLE(sive_result_option_int(r, (sive_option)rec[i].id, &iv) == SIVE_OK &&
                       iv == rec[i].int_value,
                   "option %d: record %lld, result %lld", (int)rec[i].id,
                   (long long)rec[i].int_value, (long long)iv);
        else
            ORACLE(sive_result_option_double(r, (sive_option)rec[i].id, &dv) == SIVE_OK &&
                       (same_bits(dv, rec[i].double_value) ||
                        (isnan(dv) && isnan(rec[i].double_value))),
                   "option %d: record %.17g, result %.17g", (int)rec[i].id,
                   rec[i].double_value, dv);
    }
}

static void frame(buf *f, const uint8_t *payload, size_t n, uint32_t version)
{
    uint8_t head[24] = "SIVERES";
    put32(head + 8, version);
    put64(head + 16, (uint64_t)n);
    buf_put(f, head, sizeof head);
    buf_put(f, payload, n);
    uint8_t h[8];
    put64(h, ref_fnv(FNV_OFFSET, f->p, f->n));
    buf_put(f, h, sizeof h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static memfile mf;
    if (!mf.path[0])
        memfile_open(&mf, "result");
    if (size < 1)
        return 0;
    const uint8_t mode = data[0];
    buf file = {0};
    if (mode & 4)
        buf_put(&file, data + 1, size - 1);
    else
        frame(&file, data + 1, size - 1, mode & 8 ? 1u : 5u - (uint32_t)(mode & 3));
    memfile_set(&mf, file.p, file.n);
    sive_result *r = (sive_result *)1;
    char *note = (char *)1;
    int rc = sive_result_load(mf.path, &r, &note);
    fuzz_trace("result", rc, rc == SIVE_OK ? 0 : 1);
    if (rc != SIVE_OK) {
        ORACLE(rc == SIVE_E_FORMAT, "status %d (only SIVE_E_FORMAT for a damaged file)", rc);
        ORACLE(r == NULL && note == NULL, "outputs not NULL after a failure");
        ORACLE(strstr(sive_last_errmsg(), mf.path) != NULL, "message does not name the file");
    }
    /* the bytes loader on the same bytes: the same status and result */
    sive_result *rm = NULL;
    ORACLE(sive_result_from_bytes(file.p, file.n, &rm, NULL) == rc,
           "from_bytes and load disagree on the status");
    if (rm) {
        check_same(r, rm, 0);
        sive_result_free(rm);
    }
    check_options(&file, rc, rc == SIVE_OK ? r : NULL);
    if (rc == SIVE_OK) {
        check_shape(r);
        check_round_trip(r, note);
        check_merge_alone(r);
        sive_free(note);
        sive_result_free(r);
    }
    buf_free(&file);
    return 0;
}
