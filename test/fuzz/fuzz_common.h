/* Shared by the libFuzzer targets of test/fuzz: in-memory files, reference
 * decoders and parsers written from the documented formats (include/sive/
 * data.h, mlp.h) and not from lib/, and the oracle's failure report.
 *
 * Every target runs the library on an input and then checks the answer
 * against these references both ways: an accepted input must be valid for
 * the reference and give exactly its pixels / labels / parameters, and a
 * rejected input must be invalid for it (with SIVE_E_FORMAT, a message,
 * and NULL outputs).  A disagreement aborts, which libFuzzer reports as a
 * crash together with the input.
 *
 * Decoded streams larger than FUZZ_LIMIT are not given to the library at
 * all (the target returns early): a real compression bomb legitimately
 * makes the library allocate what it decodes, which is no bug but would
 * trip libFuzzer's memory limit.  A header that merely claims a huge size
 * around a small stream is run as usual: that is the case to catch. */
#ifndef SIVE_FUZZ_COMMON_H
#define SIVE_FUZZ_COMMON_H

#include <sive/data.h>
#include <sive/mlp.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the oracles compare little-endian file bytes with host floats"
#endif

/* Largest decoded stream a target hands to the library (16 MiB). */
#define FUZZ_LIMIT ((size_t)16 << 20)

#define ORACLE(cond, ...)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "oracle failed: %s (%s:%d): ", #cond, __FILE__,   \
                    __LINE__);                                                \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\nlast library message: %s\n",                   \
                    sive_last_errmsg());                                      \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* SIVE_FUZZ_TRACE=1 in the environment: one line per library call on
 * stderr (status and reference verdict), to see what a corpus exercises. */
static inline void fuzz_trace(const char *what, int rc, int verdict)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("SIVE_FUZZ_TRACE");
        on = e && *e && *e != '0';
    }
    if (on)
        fprintf(stderr, "trace %s: status %d, reference %s: %s\n", what, rc,
                verdict == 0 ? "valid" : verdict == 1 ? "invalid" : "too big",
                rc ? sive_last_errmsg() : "");
}

/* The reference's verdict on one input. */
enum { REF_OK = 0, REF_BAD = 1, REF_BIG = 2 /* over FUZZ_LIMIT: skip */ };

/* ------------------------------------------------------------------ */
/* Files without a file system: memfd, opened by its /proc path        */
/* ------------------------------------------------------------------ */

typedef struct memfile {
    int fd;
    char path[64];
} memfile;

static inline void memfile_open(memfile *m, const char *name)
{
    m->fd = memfd_create(name, MFD_CLOEXEC);
    if (m->fd < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
}

static inline void memfile_set(memfile *m, const uint8_t *p, size_t n)
{
    if (ftruncate(m->fd, 0) != 0)
        abort();
    for (size_t done = 0; done < n;) {
        ssize_t k = pwrite(m->fd, p + done, n - done, (off_t)done);
        if (k <= 0)
            abort();
        done += (size_t)k;
    }
}

/* A new file each time: truncating an existing one makes ext4 flush it to
 * the disk on close (auto_da_alloc), a hundredfold slowdown. */
static inline void write_file(const char *path, const uint8_t *p, size_t n)
{
    unlink(path);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

/* A private directory under $TMPDIR (or /tmp), removed at exit with the
 * files the target names through fuzz_tmp_track(). */
static char fuzz_tmp_dir[512];
static char *fuzz_tmp_files[64];
static int fuzz_tmp_count;

static inline void fuzz_tmp_cleanup(void)
{
    for (int i = 0; i < fuzz_tmp_count; i++) {
        unlink(fuzz_tmp_files[i]);
        free(fuzz_tmp_files[i]);
    }
    fuzz_tmp_count = 0;
    if (fuzz_tmp_dir[0])
        rmdir(fuzz_tmp_dir);
}

static inline const char *fuzz_tmp(void)
{
    if (!fuzz_tmp_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_tmp_dir, sizeof fuzz_tmp_dir, "%s/sive-fuzz-XXXXXX",
                 t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_tmp_dir)) {
            perror(fuzz_tmp_dir);
            abort();
        }
        atexit(fuzz_tmp_cleanup);
    }
    return fuzz_tmp_dir;
}

/* dir/name, remembered for the cleanup at exit. */
static inline const char *fuzz_tmp_track(const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", fuzz_tmp(), name);
    for (int i = 0; i < fuzz_tmp_count; i++)
        if (strcmp(fuzz_tmp_files[i], p) == 0)
            return fuzz_tmp_files[i];
    if (fuzz_tmp_count == (int)(sizeof fuzz_tmp_files / sizeof *fuzz_tmp_files))
        abort();
    fuzz_tmp_files[fuzz_tmp_count] = strdup(p);
    return fuzz_tmp_files[fuzz_tmp_count++];
}

/* ------------------------------------------------------------------ */
/* Growing byte buffers                                                */
/* ------------------------------------------------------------------ */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static inline void buf_free(buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Make room for at least one more byte, up to FUZZ_LIMIT bytes in all;
 * 0 when the limit is reached. */
static inline int buf_grow(buf *b)
{
    if (b->n < b->cap)
        return 1;
    if (b->cap >= FUZZ_LIMIT)
        return 0;
    size_t c = b->cap ? 2 * b->cap : 4096;
    if (c > FUZZ_LIMIT)
        c = FUZZ_LIMIT;
    uint8_t *p = realloc(b->p, c);
    if (!p)
        abort();
    b->p = p;
    b->cap = c;
    return 1;
}

/* Room for n more bytes (no limit: for data the target writes). */
static inline void buf_reserve(buf *b, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        uint8_t *q = realloc(b->p, c);
        if (!q)
            abort();
        b->p = q;
        b->cap = c;
    }
}

static inline void buf_put(buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

/* Append one zstd frame of p[0..n) (level 1, content size and checksum),
 * as the `zstd` program writes it. */
static inline void buf_put_zstd(buf *out, const uint8_t *p, size_t n)
{
    static ZSTD_CCtx *c;
    if (!c) {
        c = ZSTD_createCCtx();
        if (!c)
            abort();
        ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
        ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    }
    size_t bound = ZSTD_compressBound(n);
    buf_reserve(out, bound);
    size_t r = ZSTD_compress2(c, out->p + out->n, bound, p, n);
    if (ZSTD_isError(r))
        abort();
    out->n += r;
}

/* ------------------------------------------------------------------ */
/* Reference decoders: the whole input must be consumed                */
/* ------------------------------------------------------------------ */

/* One or more zstd frames (skippable frames included), all of src. */
static inline int ref_zstd(const uint8_t *src, size_t n, buf *out)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        abort();
    ZSTD_inBuffer in = {src, n, 0};
    int rc = REF_BAD;
    for (;;) {
        if (!buf_grow(out)) {
            rc = REF_BIG;
            break;
        }
        ZSTD_outBuffer ob = {out->p, out->cap, out->n};
        size_t in0 = in.pos, out0 = ob.pos;
        size_t r = ZSTD_decompressStream(d, &ob, &in);
        out->n = ob.pos;
        if (ZSTD_isError(r))
            break;
        if (r == 0 && in.pos == n) {
            rc = REF_OK; /* the last frame ended with the input */
            break;
        }
        if (in.pos == in0 && ob.pos == out0 && ob.pos < ob.size)
            break; /* input exhausted inside a frame */
    }
    ZSTD_freeDCtx(d);
    return rc;
}

/* One or more gzip members, all of src. */
static inline int ref_gzip(const uint8_t *src, size_t n, buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + 15) != Z_OK)
        abort();
    size_t pos = 0;
    int rc = REF_BAD;
    for (;;) {
        if (!buf_grow(out)) {
            rc = REF_BIG;
            break;
        }
        z.next_in = (Bytef *)(uintptr_t)(src + pos);
        z.avail_in = (uInt)(n - pos);
        z.next_out = out->p + out->n;
        z.avail_out = (uInt)(out->cap - out->n);
        int zr = inflate(&z, Z_NO_FLUSH);
        pos = n - z.avail_in;
        out->n = out->cap - z.avail_out;
        if (zr == Z_STREAM_END) {
            if (pos == n) {
                rc = REF_OK;
                break;
            }
            inflateReset(&z); /* another member follows */
            continue;
        }
        if (zr == Z_OK)
            continue;
        if (zr == Z_BUF_ERROR && z.avail_out == 0)
            continue; /* needs output room: grow */
        break;        /* corrupted, or the input ends inside a member */
    }
    inflateEnd(&z);
    return rc;
}

/* A file as data.h describes it: compression from the first bytes. */
static inline int ref_file(const uint8_t *src, size_t n, buf *out)
{
    if (n < 4)
        return REF_BAD;
    if ((src[0] == 0x28 && src[1] == 0xB5 && src[2] == 0x2F &&
         src[3] == 0xFD) ||
        ((src[0] & 0xF0) == 0x50 && src[1] == 0x2A && src[2] == 0x4D &&
         src[3] == 0x18))
        return ref_zstd(src, n, out);
    if (src[0] == 0x1F && src[1] == 0x8B)
        return ref_gzip(src, n, out);
    if (src[0] == 0 && src[1] == 0) {
        if (n > FUZZ_LIMIT)
            return REF_BIG;
        buf_put(out, src, n);
        return REF_OK;
    }
    return REF_BAD;
}

/* ------------------------------------------------------------------ */
/* IDX                                                                 */
/* ------------------------------------------------------------------ */

typedef struct ref_idx {
    uint64_t dims[3];
    const uint8_t *data; /* points into the decoded buffer */
    uint64_t bytes;
} ref_idx;

/* Decoded IDX of unsigned bytes with nd dimensions, each in [1, 2^24],
 * payload at most 2^32 bytes, and nothing after it. */
static inline int ref_idx_parse(const uint8_t *p, size_t n, int nd, ref_idx *r)
{
    if (n < 4 || p[0] != 0 || p[1] != 0 || p[2] != 0x08 || p[3] != nd)
        return REF_BAD;
    if (n < 4 + 4 * (size_t)nd)
        return REF_BAD;
    uint64_t t = 1;
    for (int i = 0; i < nd; i++) {
        const uint8_t *q = p + 4 + 4 * i;
        uint64_t d = (uint64_t)q[0] << 24 | (uint64_t)q[1] << 16 |
                     (uint64_t)q[2] << 8 | q[3];
        if (d == 0 || d > SIVE_DATASET_MAX_DIM)
            return REF_BAD;
        if (t > (uint64_t)SIVE_DATASET_MAX_BYTES / d)
            return REF_BAD;
        t *= d;
        r->dims[i] = d;
    }
    if ((uint64_t)(n - 4 - 4 * (size_t)nd) != t)
        return REF_BAD;
    r->data = p + 4 + 4 * nd;
    r->bytes = t;
    return REF_OK;
}

/* An image/label pair, decoded.  REF_OK only when both parse and the
 * counts agree. */
typedef struct ref_pair {
    buf img, lab;
    ref_idx i, l;
    int verdict;
} ref_pair;

static inline void ref_pair_free(ref_pair *r)
{
    buf_free(&r->img);
    buf_free(&r->lab);
}

/* decoded: the inputs are IDX already (no compression layer). */
static inline int ref_pair_make(ref_pair *r, const uint8_t *img, size_t ni,
                         const uint8_t *lab, size_t nl, int decoded)
{
    memset(r, 0, sizeof *r);
    int a, b;
    if (decoded) {
        buf_put(&r->img, img, ni);
        buf_put(&r->lab, lab, nl);
        a = b = REF_OK;
    } else {
        a = ref_file(img, ni, &r->img);
        b = ref_file(lab, nl, &r->lab);
    }
    if (a == REF_BIG || b == REF_BIG)
        return r->verdict = REF_BIG;
    if (a || b)
        return r->verdict = REF_BAD;
    if (ref_idx_parse(r->img.p, r->img.n, 3, &r->i) ||
        ref_idx_parse(r->lab.p, r->lab.n, 1, &r->l) ||
        r->i.dims[0] != r->l.dims[0])
        return r->verdict = REF_BAD;
    return r->verdict = REF_OK;
}

/* The library's data set equals the reference pair. */
static inline void check_dataset(const sive_dataset *ds, const ref_pair *r,
                          const char *what)
{
    ORACLE(ds != NULL, "%s: no data set", what);
    ORACLE(sive_dataset_count(ds) == r->i.dims[0] &&
               sive_dataset_rows(ds) == r->i.dims[1] &&
               sive_dataset_cols(ds) == r->i.dims[2],
           "%s: %zu x %zu x %zu, reference %llu x %llu x %llu", what,
           sive_dataset_count(ds), sive_dataset_rows(ds),
           sive_dataset_cols(ds), (unsigned long long)r->i.dims[0],
           (unsigned long long)r->i.dims[1], (unsigned long long)r->i.dims[2]);
    ORACLE(memcmp(sive_dataset_pixels(ds), r->i.data, r->i.bytes) == 0,
           "%s: pixels differ", what);
    ORACLE(memcmp(sive_dataset_labels(ds), r->l.data, r->l.bytes) == 0,
           "%s: labels differ", what);
    unsigned top = 0;
    for (uint64_t k = 0; k < r->l.bytes; k++)
        if (r->l.data[k] > top)
            top = r->l.data[k];
    ORACLE(sive_dataset_classes(ds) == top + 1u, "%s: %zu classes, want %u",
           what, sive_dataset_classes(ds), top + 1u);
}

/* The library's failure: a status, a message, no handle. */
static inline void check_rejected(int rc, int want, const void *out, const char *what)
{
    ORACLE(rc == want, "%s: status %d, expected %d", what, rc, want);
    ORACLE(out == NULL, "%s: output not NULL after a failure", what);
    ORACLE(sive_last_errmsg()[0] != '\0', "%s: no message", what);
}

/* ------------------------------------------------------------------ */
/* Checkpoints                                                         */
/* ------------------------------------------------------------------ */

#define FNV_OFFSET 0xcbf29ce484222325ull

static inline uint64_t ref_fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static inline void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

typedef struct ref_ckpt {
    buf payload;
    uint64_t sizes[4], count;
    const uint8_t *params; /* count little-endian float32 */
} ref_ckpt;

/* The decoded payload of format version 1 (mlp.h). */
static inline int ref_ckpt_payload(const uint8_t *p, size_t n, ref_ckpt *c)
{
    if (n < 96 || memcmp(p, "SIVECKPT", 8) != 0 || le32(p + 8) != 1 ||
        le32(p + 12) != 1)
        return REF_BAD;
    for (int i = 0; i < 4; i++) {
        c->sizes[i] = le64(p + 16 + 8 * i);
        if (c->sizes[i] == 0 || c->sizes[i] > SIVE_MLP_MAX_WIDTH)
            return REF_BAD;
    }
    if (c->sizes[3] < 2)
        return REF_BAD;
    const uint64_t *s = c->sizes;
    uint64_t want = s[1] * (s[0] + 1) + s[2] * (s[1] + 1) + s[3] * (s[2] + 1);
    c->count = le64(p + 80);
    if (want > SIVE_MLP_MAX_PARAMS || c->count != want)
        return REF_BAD;
    if ((uint64_t)n != 88 + 4 * want + 8)
        return REF_BAD;
    if (ref_fnv(FNV_OFFSET, p, n - 8) != le64(p + n - 8))
        return REF_BAD;
    c->params = p + 88;
    return REF_OK;
}

/* A whole checkpoint file: exactly one zstd frame with its content size,
 * then the 20-byte skippable trailer holding the frame's FNV-1a 64. */
static inline int ref_ckpt_file(const uint8_t *f, size_t n, ref_ckpt *c)
{
    memset(c, 0, sizeof *c);
    if (n < 24 || le32(f) != 0xFD2FB528u)
        return REF_BAD;
    const uint8_t *t = f + n - 20;
    size_t flen = n - 20;
    if (le32(t) != 0x184D2A53u || le32(t + 4) != 12 ||
        memcmp(t + 8, "SIVE", 4) != 0 ||
        ref_fnv(FNV_OFFSET, f, flen) != le64(t + 12))
        return REF_BAD;
    if (ZSTD_findFrameCompressedSize(f, flen) != flen)
        return REF_BAD; /* not exactly one frame */
    unsigned long long fcs = ZSTD_getFrameContentSize(f, flen);
    if (fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs == ZSTD_CONTENTSIZE_ERROR)
        return REF_BAD;
    int v = ref_zstd(f, flen, &c->payload);
    if (v)
        return v;
    if (c->payload.n != fcs)
        return REF_BAD;
    return ref_ckpt_payload(c->payload.p, c->payload.n, c);
}

/* Run sive_checkpoint_load on path (whose bytes are f[0..n)) and check it
 * against the reference both ways. */
/* sive_checkpoint_from_bytes() on the file's bytes agrees with the file
 * loader (status rc, and for an accepted file m, th, meta bit for bit);
 * an accepted checkpoint goes to bytes and back unchanged. */
static inline void check_checkpoint_bytes(const uint8_t *f, size_t n, int rc, const sive_mlp *m,
                                          const float *th, const sive_checkpoint_meta *meta)
{
    sive_mlp *m2 = (sive_mlp *)1;
    float *th2 = (float *)1;
    sive_checkpoint_meta meta2;
    memset(&meta2, 0x5A, sizeof meta2);
    int rc2 = sive_checkpoint_from_bytes(f, n, &m2, &th2, &meta2);
    ORACLE(rc2 == rc || (rc == SIVE_E_NOMEM || rc2 == SIVE_E_NOMEM),
           "from_bytes status %d, load %d", rc2, rc);
    if (rc2 != SIVE_OK) {
        ORACLE(m2 == NULL && th2 == NULL, "from_bytes outputs not NULL after a failure");
        ORACLE(rc2 == SIVE_E_NOMEM || strstr(sive_last_errmsg(), "checkpoint bytes") != NULL,
               "from_bytes message does not say \"checkpoint bytes\"");
        return;
    }
    if (rc == SIVE_OK) {
        ORACLE(sive_mlp_dim(m2) == sive_mlp_dim(m) &&
                   memcmp(th2, th, 4 * sive_mlp_dim(m)) == 0 &&
                   memcmp(&meta2, meta, sizeof meta2) == 0,
               "from_bytes and load differ");
        void *b = NULL;
        size_t len = 0;
        sive_mlp *m3 = NULL;
        float *th3 = NULL;
        int rc3 = sive_checkpoint_to_bytes(m2, th2, &meta2, &b, &len);
        ORACLE(rc3 == SIVE_OK || rc3 == SIVE_E_NOMEM, "to_bytes status %d", rc3);
        if (rc3 == SIVE_OK) {
            ORACLE(sive_checkpoint_from_bytes(b, len, &m3, &th3, NULL) == SIVE_OK &&
                       memcmp(th3, th2, 4 * sive_mlp_dim(m2)) == 0,
                   "to_bytes does not read back");
            sive_free(th3);
            sive_mlp_free(m3);
            sive_free(b);
        }
    }
    sive_free(th2);
    sive_mlp_free(m2);
}

static inline void check_checkpoint(const char *path, const uint8_t *f, size_t n)
{
    ref_ckpt c;
    int v = ref_ckpt_file(f, n, &c);
    if (v == REF_BIG) {
        buf_free(&c.payload);
        return;
    }
    sive_mlp *m = (sive_mlp *)1;
    float *th = (float *)1;
    sive_checkpoint_meta meta;
    memset(&meta, 0xA5, sizeof meta);
    int rc = sive_checkpoint_load(path, &m, &th, &meta);
    fuzz_trace("checkpoint", rc, v);
    if (rc == SIVE_E_NOMEM) {
        /* allowed by the API, but only for a real model */
        ORACLE(v == REF_OK, "SIVE_E_NOMEM for an invalid file");
    } else if (rc != SIVE_OK) {
        ORACLE(v == REF_BAD, "valid checkpoint rejected");
        check_rejected(rc, SIVE_E_FORMAT, m, "checkpoint");
        ORACLE(th == NULL, "theta not NULL after a failure");
        ORACLE(strstr(sive_last_errmsg(), path) != NULL,
               "message does not name the file");
        check_checkpoint_bytes(f, n, rc, NULL, NULL, NULL);
    } else {
        ORACLE(v == REF_OK, "invalid checkpoint accepted");
        size_t s[4];
        sive_mlp_sizes(m, &s[0], &s[1], &s[2], &s[3]);
        for (int i = 0; i < 4; i++)
            ORACLE(s[i] == c.sizes[i], "size %d: %zu, reference %llu", i,
                   s[i], (unsigned long long)c.sizes[i]);
        ORACLE(sive_mlp_dim(m) == c.count, "dim %zu, reference %llu",
               sive_mlp_dim(m), (unsigned long long)c.count);
        /* little-endian host: the floats are the payload's bytes */
        ORACLE(memcmp(th, c.params, 4 * (size_t)c.count) == 0,
               "parameters differ");
        const uint8_t *h = c.payload.p;
        uint64_t bits[2];
        memcpy(&bits[0], &meta.train_loss, 8);
        memcpy(&bits[1], &meta.test_loss, 8);
        ORACLE((uint64_t)meta.epoch == le64(h + 48) && meta.seed == le64(h + 56) &&
                   bits[0] == le64(h + 64) && bits[1] == le64(h + 72),
               "metadata differs");
        check_checkpoint_bytes(f, n, rc, m, th, &meta);
        sive_free(th);
        sive_mlp_free(m);
    }
    buf_free(&c.payload);
}

#endif
