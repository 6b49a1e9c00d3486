/* Versioned, checksummed, zstd-compressed checkpoints of the reference MLP.
 *
 * File layout (all integers little-endian):
 *
 *   zstd frame (content size and content checksum recorded) of the payload
 *     off  0  magic "SIVECKPT"                         8 bytes
 *          8  format version (1)                       u32
 *         12  dtype (1 = float32 little-endian)        u32
 *         16  in, h1, h2, classes                      4 x u64
 *         48  epoch                                    i64
 *         56  seed                                     u64
 *         64  train_loss, test_loss                    2 x f64 (IEEE bits)
 *         80  parameter count                          u64
 *         88  parameters                               count x f32
 *   88+4count FNV-1a 64 of bytes [0, 88+4count)        u64
 *   zstd skippable frame (magic 0x184D2A53, size 12):
 *     tag "SIVE", FNV-1a 64 of the compressed frame    4 + 8 bytes
 *
 * The trailing hash covers every byte of the compressed frame, so any
 * damage to the file is caught before decompression even starts; zstd's own
 * checksum and the payload hash then guard the decoder and the writer.  The
 * skippable frame keeps the file readable by `zstd -d`.
 *
 * Loading never allocates what the header claims: the parameter buffer
 * grows with the data the frame actually yields (zread_grow), so a
 * malformed file costs memory in proportion to its real content and ends
 * in SIVE_E_FORMAT, not SIVE_E_NOMEM (issue 14 #1). */
#include "fileio.h"
#include "internal.h"
#include "sive/mlp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define HEADER_SIZE 88
#define HASH_SIZE 8
#define TRAILER_MAGIC 0x184D2A53u
#define TRAILER_SIZE 20 /* skippable magic + size + "SIVE" + hash */
#define DTYPE_F32LE 1u
#define ZSTD_LEVEL 3

/* ------------------------------------------------------------------ */
/* Bytes                                                              */
/* ------------------------------------------------------------------ */

static uint64_t fnv1a64(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_OFFSET 0xcbf29ce484222325ull

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double bits_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static int host_is_le(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Convert n float32 between host order and little-endian (an involution). */
static void f32_le_swap(uint8_t *p, size_t n)
{
    if (host_is_le())
        return;
    for (size_t i = 0; i < n; i++, p += 4) {
        uint8_t t = p[0];
        p[0] = p[3];
        p[3] = t;
        t = p[1];
        p[1] = p[2];
        p[2] = t;
    }
}

/* ------------------------------------------------------------------ */
/* Save                                                               */
/* ------------------------------------------------------------------ */

/* Write buf to path atomically (fileio.c: temporary file, fsync, rename,
 * fsync of the directory). */
static int write_atomic(const char *path, const uint8_t *buf, size_t n)
{
    char err[SIVE_ERRMSG_LEN];
    sivei_atomic a;
    int rc = sivei_atomic_open(&a, path, err);
    if (!rc) {
        rc = sivei_atomic_write(&a, buf, n, err);
        if (!rc)
            rc = sivei_atomic_commit(&a, err);
        else
            sivei_atomic_abort(&a);
    }
    return rc ? sivei_fail(NULL, rc, "%s", err) : SIVE_OK;
}

int sive_checkpoint_save(const char *path, const sive_mlp *m,
                         const float *theta, const sive_checkpoint_meta *meta)
{
    if (!path || !m || !theta)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_checkpoint_save: NULL argument");
    char shown[SIVEI_PATH_SHOWN]; /* path for messages: the cause must fit */
    sivei_path_shown(shown, sizeof shown, path);
    size_t sz[4];
    sive_mlp_sizes(m, &sz[0], &sz[1], &sz[2], &sz[3]);
    const size_t dim = sive_mlp_dim(m);
    sive_checkpoint_meta md = {0, 0, NAN, NAN};
    if (meta)
        md = *meta;

    /* dim <= 2^32 (sive_mlp_new), so the sizes below fit on 64-bit hosts */
    if (dim > (SIZE_MAX - HEADER_SIZE - HASH_SIZE) / 4)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: model too large", shown);
    const size_t plen = HEADER_SIZE + 4 * dim + HASH_SIZE;
    uint8_t *payload = malloc(plen);
    const size_t cap = ZSTD_compressBound(plen) + TRAILER_SIZE;
    uint8_t *file = malloc(cap);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    if (!payload || !file || !cc) {
        free(payload);
        free(file);
        ZSTD_freeCCtx(cc);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", shown);
    }
    uint8_t *h = payload;
    memcpy(h, "SIVECKPT", 8);
    put_u32(h + 8, SIVE_CHECKPOINT_VERSION);
    put_u32(h + 12, DTYPE_F32LE);
    for (int i = 0; i < 4; i++)
        put_u64(h + 16 + 8 * i, sz[i]);
    put_u64(h + 48, (uint64_t)md.epoch);
    put_u64(h + 56, md.seed);
    put_u64(h + 64, f64_bits(md.train_loss));
    put_u64(h + 72, f64_bits(md.test_loss));
    put_u64(h + 80, dim);
    memcpy(h + HEADER_SIZE, theta, 4 * dim);
    f32_le_swap(h + HEADER_SIZE, dim);
    put_u64(h + plen - HASH_SIZE, fnv1a64(FNV_OFFSET, payload, plen - HASH_SIZE));

    size_t r = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_compress2(cc, file, cap - TRAILER_SIZE, payload, plen);
    ZSTD_freeCCtx(cc);
    free(payload);
    if (ZSTD_isError(r)) {
        free(file);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: zstd compression failed: %s",
                         shown, ZSTD_getErrorName(r));
    }
    uint8_t *t = file + r;
    put_u32(t, TRAILER_MAGIC);
    put_u32(t + 4, TRAILER_SIZE - 8);
    memcpy(t + 8, "SIVE", 4);
    put_u64(t + 12, fnv1a64(FNV_OFFSET, file, r));

    int rc = write_atomic(path, file, r + TRAILER_SIZE);
    free(file);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Load                                                               */
/* ------------------------------------------------------------------ */

/* The first 4 bytes (head) and the last TRAILER_SIZE (t) of a file of len
 * bytes: a zstd frame and libsive's trailer, or SIVE_E_FORMAT. */
static int check_ends(const char *path, const uint8_t *head, const uint8_t *t, size_t len)
{
    if (len < 4 || get_u32(head) != ZSTD_MAGICNUMBER)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: not a libsive checkpoint (no zstd frame)", path);
    if (len < TRAILER_SIZE + 4)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: truncated checkpoint (%zu bytes)", path, len);
    if (get_u32(t) != TRAILER_MAGIC ||
        get_u32(t + 4) != TRAILER_SIZE - 8 || memcmp(t + 8, "SIVE", 4) != 0)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: truncated or not a libsive checkpoint (checksum "
                         "trailer missing)", path);
    return SIVE_OK;
}

/* Largest file a valid checkpoint can be: incompressible payload of the
 * largest model plus the zstd overhead and trailer. */
static uint64_t max_file_size(void)
{
    uint64_t p = HEADER_SIZE + 4 * SIVE_MLP_MAX_PARAMS + HASH_SIZE;
    return p + p / 128 + 4096 + TRAILER_SIZE;
}

/* Messages name the file as shown (see sivei_path_shown). */
static int read_file(const char *path, const char *shown, uint8_t **out,
                     size_t *len)
{
    char eb[SIVEI_STRERROR_LEN];
    *out = NULL;
    struct stat st;
    char err[SIVE_ERRMSG_LEN];
    int rc, fd = sivei_open_regular(path, shown, &st, &rc, err);
    if (fd < 0)
        return sivei_fail(NULL, rc, "%s", err);
    if ((uint64_t)st.st_size > max_file_size() ||
        (uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: %lld bytes is larger than any checkpoint", shown,
                         (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size;
    /* the two ends before the whole: a junk file costs 24 bytes, not its
     * size (a short read leaves zeros, which the checks refuse) */
    uint8_t head[4] = {0}, tail[TRAILER_SIZE] = {0};
    if (n >= TRAILER_SIZE + 4) {
        if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
            pread(fd, tail, sizeof tail, (off_t)(n - TRAILER_SIZE)) != (ssize_t)sizeof tail)
            memset(head, 0, sizeof head);
        int erc = check_ends(shown, head, tail, n);
        if (erc) {
            close(fd);
            return erc;
        }
    }
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", shown);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return sivei_fail(NULL, SIVE_E_IO, "%s: read failed: %s", shown,
                             sivei_strerror(e, eb, sizeof eb));
        }
        if (k == 0)
            break; /* shrank while reading: the checks below catch it */
        got += (size_t)k;
    }
    close(fd);
    *out = buf;
    *len = got;
    return SIVE_OK;
}

/* Decompress exactly n bytes of the frame into dst. */
static int zread(const char *path, ZSTD_DCtx *d, ZSTD_inBuffer *in, void *dst,
                 size_t n, size_t *last)
{
    ZSTD_outBuffer out = {dst, n, 0};
    while (out.pos < n) {
        size_t in0 = in->pos, out0 = out.pos;
        size_t r = ZSTD_decompressStream(d, &out, in);
        if (ZSTD_isError(r))
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: corrupted checkpoint (zstd: %s)", path,
                             ZSTD_getErrorName(r));
        *last = r;
        if ((r == 0 && out.pos < n) || (in->pos == in0 && out.pos == out0))
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: truncated checkpoint (payload ends early)",
                             path);
    }
    return SIVE_OK;
}

/* First size of the parameter buffer; it then doubles as data arrive. */
#define FIRST_ALLOC ((size_t)1 << 20)

/* Decompress exactly n bytes of the frame into a new buffer (*out) that
 * grows with the data actually decoded: FIRST_ALLOC bytes first, then
 * doubling up to n.  A header and frame that claim 2^32 parameters around a
 * payload of a few bytes thus cost a megabyte, not 16 GiB, before the
 * frame runs dry (SIVE_E_FORMAT "truncated"); memory stays within twice
 * what the frame really yields. */
static int zread_grow(const char *path, ZSTD_DCtx *d, ZSTD_inBuffer *in,
                      size_t n, uint8_t **out, size_t *last)
{
    size_t cap = n < FIRST_ALLOC ? n : FIRST_ALLOC;
    uint8_t *buf = malloc(cap ? cap : 1);
    *out = NULL;
    if (!buf)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", path);
    ZSTD_outBuffer ob = {buf, cap, 0};
    while (ob.pos < n) {
        if (ob.pos == cap) {
            size_t next = cap > n / 2 ? n : 2 * cap;
            uint8_t *grown = realloc(buf, next);
            if (!grown) {
                free(buf);
                return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory",
                                 path);
            }
            buf = grown;
            cap = next;
            ob.dst = buf;
            ob.size = cap;
        }
        size_t in0 = in->pos, out0 = ob.pos;
        size_t r = ZSTD_decompressStream(d, &ob, in);
        if (ZSTD_isError(r)) {
            free(buf);
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: corrupted checkpoint (zstd: %s)", path,
                             ZSTD_getErrorName(r));
        }
        *last = r;
        if ((r == 0 && ob.pos < n) || (in->pos == in0 && ob.pos == out0)) {
            free(buf);
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: truncated checkpoint: the header announces "
                             "%zu parameters, the file holds %zu of them",
                             path, n / 4, ob.pos / 4);
        }
    }
    *out = buf;
    return SIVE_OK;
}

/* Validate the header; on success *dim is the parameter count. */
static int check_header(const char *path, const uint8_t *h, size_t sz[4],
                        size_t *dim)
{
    if (memcmp(h, "SIVECKPT", 8) != 0)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: not a libsive checkpoint (wrong magic)", path);
    uint32_t version = get_u32(h + 8);
    if (version != SIVE_CHECKPOINT_VERSION)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: checkpoint format version %u is not supported "
                         "(this library reads version %d)", path, version,
                         SIVE_CHECKPOINT_VERSION);
    uint32_t dtype = get_u32(h + 12);
    if (dtype != DTYPE_F32LE)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: parameter data type %u is not supported (only "
                         "1, float32)", path, dtype);
    uint64_t s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = get_u64(h + 16 + 8 * i);
        if (s[i] == 0 || s[i] > SIVE_MLP_MAX_WIDTH || (i == 3 && s[i] < 2))
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: invalid layer sizes %llu-%llu-%llu-%llu",
                             path, (unsigned long long)get_u64(h + 16),
                             (unsigned long long)get_u64(h + 24),
                             (unsigned long long)get_u64(h + 32),
                             (unsigned long long)get_u64(h + 40));
        sz[i] = (size_t)s[i];
    }
    uint64_t want = s[1] * (s[0] + 1) + s[2] * (s[1] + 1) + s[3] * (s[2] + 1);
    if (want > SIVE_MLP_MAX_PARAMS)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: layer sizes %zu-%zu-%zu-%zu give %llu "
                         "parameters, more than supported", path, sz[0], sz[1],
                         sz[2], sz[3], (unsigned long long)want);
    uint64_t count = get_u64(h + 80);
    if (count != want)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: parameter count %llu does not match layer sizes "
                         "%zu-%zu-%zu-%zu (%llu parameters)", path,
                         (unsigned long long)count, sz[0], sz[1], sz[2], sz[3],
                         (unsigned long long)want);
    if (count > (SIZE_MAX - HEADER_SIZE - HASH_SIZE) / 4)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: %llu parameters do not fit in this host's "
                         "address space", path, (unsigned long long)count);
    *dim = (size_t)count;
    return SIVE_OK;
}

/* Drive the frame to its end (last: ZSTD_decompressStream's last hint):
 * that is where zstd checks its checksum; no data may come out. */
static int zread_end(const char *path, ZSTD_DCtx *d, ZSTD_inBuffer *in, size_t last)
{
    while (last != 0) {
        uint8_t extra;
        ZSTD_outBuffer out = {&extra, 1, 0};
        size_t in0 = in->pos;
        last = ZSTD_decompressStream(d, &out, in);
        if (ZSTD_isError(last))
            return sivei_fail(NULL, SIVE_E_FORMAT, "%s: corrupted checkpoint (zstd: %s)",
                              path, ZSTD_getErrorName(last));
        if (out.pos > 0)
            return sivei_fail(NULL, SIVE_E_FORMAT,
                              "%s: corrupted checkpoint (data after the parameters)", path);
        if (last != 0 && in->pos == in0)
            return sivei_fail(NULL, SIVE_E_FORMAT,
                              "%s: truncated checkpoint (frame incomplete)", path);
    }
    return SIVE_OK;
}

/* Checks and decoding on the file already in memory. */
static int parse(const char *path, const uint8_t *buf, size_t len,
                 sive_mlp **mlp_out, float **theta_out,
                 sive_checkpoint_meta *meta_out)
{
    int erc = check_ends(path, buf, len >= TRAILER_SIZE ? buf + len - TRAILER_SIZE : buf, len);
    if (erc)
        return erc;
    const uint8_t *t = buf + len - TRAILER_SIZE;
    const size_t flen = len - TRAILER_SIZE;
    if (fnv1a64(FNV_OFFSET, buf, flen) != get_u64(t + 12))
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: corrupted checkpoint (checksum mismatch)", path);

    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", path);
    ZSTD_inBuffer in = {buf, flen, 0};
    uint8_t header[HEADER_SIZE], hash[HASH_SIZE];
    size_t sz[4], dim = 0, last = 1;
    uint8_t *params = NULL;
    sive_mlp *m = NULL;
    int rc = zread(path, d, &in, header, HEADER_SIZE, &last);
    if (!rc)
        rc = check_header(path, header, sz, &dim);
    if (!rc) {
        unsigned long long fcs = ZSTD_getFrameContentSize(buf, flen);
        if (fcs != (unsigned long long)HEADER_SIZE + 4ull * dim + HASH_SIZE)
            rc = sivei_fail(NULL, SIVE_E_FORMAT,
                           "%s: corrupted checkpoint (frame size %llu does not "
                           "match the header)", path, fcs);
    }
    /* never malloc(4 * dim) up front: dim comes from the file */
    if (!rc)
        rc = zread_grow(path, d, &in, 4 * dim, &params, &last);
    if (!rc)
        rc = zread(path, d, &in, hash, HASH_SIZE, &last);
    if (!rc)
        rc = zread_end(path, d, &in, last);
    if (!rc && in.pos != flen)
        rc = sivei_fail(NULL, SIVE_E_FORMAT,
                       "%s: corrupted checkpoint (bytes after the frame)", path);
    ZSTD_freeDCtx(d);
    if (!rc) {
        uint64_t hsh = fnv1a64(FNV_OFFSET, header, HEADER_SIZE);
        hsh = fnv1a64(hsh, params, 4 * dim);
        if (hsh != get_u64(hash))
            rc = sivei_fail(NULL, SIVE_E_FORMAT,
                           "%s: corrupted checkpoint (payload hash mismatch)",
                           path);
    }
    if (!rc)
        rc = sive_mlp_new(&m, sz[0], sz[1], sz[2], sz[3]);
    if (!rc && sive_mlp_dim(m) != dim)
        rc = sivei_fail(NULL, SIVE_E_FORMAT, "%s: parameter count mismatch",
                       path);
    if (rc) {
        free(params);
        sive_mlp_free(m);
        return rc;
    }
    f32_le_swap(params, dim);
    if (meta_out) {
        meta_out->epoch = (int64_t)get_u64(header + 48);
        meta_out->seed = get_u64(header + 56);
        meta_out->train_loss = bits_f64(get_u64(header + 64));
        meta_out->test_loss = bits_f64(get_u64(header + 72));
    }
    *mlp_out = m;
    *theta_out = (float *)(void *)params;
    return SIVE_OK;
}

int sive_checkpoint_load(const char *path, sive_mlp **mlp_out,
                         float **theta_out, sive_checkpoint_meta *meta_out)
{
    if (mlp_out)
        *mlp_out = NULL;
    if (theta_out)
        *theta_out = NULL;
    if (!path || !mlp_out || !theta_out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_checkpoint_load: NULL argument");
    uint8_t *buf;
    size_t len = 0; /* set by read_file; 0 silences a false GCC warning */
    char shown[SIVEI_PATH_SHOWN]; /* path for messages: the cause must fit */
    sivei_path_shown(shown, sizeof shown, path);
    int rc = read_file(path, shown, &buf, &len);
    if (rc)
        return rc;
    rc = parse(shown, buf, len, mlp_out, theta_out, meta_out);
    free(buf);
    return rc;
}
