/*
 * The data-set handle and IDX files: reading (plain, gzip, zstd; detected by
 * magic bytes) and writing (plain or zstd, atomically).
 *
 * Reading never trusts the header: dimensions are checked against fixed
 * caps before anything is allocated, the payload buffer grows with the data
 * actually decoded, and decoding stops one byte past the announced payload.
 */
#include "fileio.h"
#include "internal.h"
#include "sive/data.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h> /* ZSTD_getErrorCode: tell NOMEM from corruption */
#ifdef SIVE_HAVE_ZLIB
#include <zlib.h>
#endif

struct sive_dataset {
    size_t count, rows, cols, classes;
    uint8_t *pixels; /* count*rows*cols */
    uint8_t *labels; /* count */
};

#define IDX_MAX_DIM ((uint64_t)SIVE_DATASET_MAX_DIM)
#define IDX_MAX_BYTES ((uint64_t)SIVE_DATASET_MAX_BYTES)
#define IDX_TYPE_UBYTE 0x08
#define IDX_CHUNK ((size_t)64 * 1024) /* file read / write buffer      */
#define IDX_FIRST_ALLOC ((size_t)1 << 20) /* payload buffer starts here */

/* ------------------------------------------------------------------ */
/* The handle                                                         */
/* ------------------------------------------------------------------ */

/* Wrap buffers (ownership taken, freed on failure too) in a new handle. */
static int dataset_adopt(sive_dataset **out, uint8_t *pixels, uint8_t *labels,
                         size_t count, size_t rows, size_t cols)
{
    sive_dataset *ds = malloc(sizeof *ds);
    if (!ds) {
        free(pixels);
        free(labels);
        return sivei_fail(NULL, SIVE_E_NOMEM, "data set: out of memory");
    }
    uint8_t top = 0;
    for (size_t i = 0; i < count; i++)
        if (labels[i] > top)
            top = labels[i];
    ds->count = count;
    ds->rows = rows;
    ds->cols = cols;
    ds->classes = (size_t)top + 1;
    ds->pixels = pixels;
    ds->labels = labels;
    *out = ds;
    return SIVE_OK;
}

int sive_dataset_from_memory(sive_dataset **out, const uint8_t *pixels,
                             const uint8_t *labels, size_t count, size_t rows,
                             size_t cols)
{
    if (out)
        *out = NULL;
    if (!out || !pixels || !labels)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_from_memory: NULL argument");
    const size_t dims[3] = {count, rows, cols};
    for (int i = 0; i < 3; i++)
        if (dims[i] == 0 || dims[i] > IDX_MAX_DIM)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "sive_dataset_from_memory: %zu x %zu x %zu: "
                             "every dimension must be in [1, %llu]",
                             count, rows, cols,
                             (unsigned long long)IDX_MAX_DIM);
    /* Each factor is <= 2^24, so the product of any two fits in 64 bits. */
    uint64_t total = (uint64_t)count * rows;
    if (total > IDX_MAX_BYTES / cols || total * cols > SIZE_MAX)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_from_memory: %zu x %zu x %zu bytes "
                         "exceeds the limit of %llu",
                         count, rows, cols, (unsigned long long)IDX_MAX_BYTES);
    total *= cols;
    uint8_t *px = malloc((size_t)total);
    uint8_t *lb = malloc(count);
    if (!px || !lb) {
        free(px);
        free(lb);
        return sivei_fail(NULL, SIVE_E_NOMEM, "data set: out of memory");
    }
    memcpy(px, pixels, (size_t)total);
    memcpy(lb, labels, count);
    return dataset_adopt(out, px, lb, count, rows, cols);
}

void sive_dataset_free(sive_dataset *ds)
{
    if (!ds)
        return;
    free(ds->pixels);
    free(ds->labels);
    free(ds);
}

size_t sive_dataset_count(const sive_dataset *ds) { return ds ? ds->count : 0; }
size_t sive_dataset_rows(const sive_dataset *ds) { return ds ? ds->rows : 0; }
size_t sive_dataset_cols(const sive_dataset *ds) { return ds ? ds->cols : 0; }
size_t sive_dataset_classes(const sive_dataset *ds)
{
    return ds ? ds->classes : 0;
}
const uint8_t *sive_dataset_pixels(const sive_dataset *ds)
{
    return ds ? ds->pixels : NULL;
}
const uint8_t *sive_dataset_labels(const sive_dataset *ds)
{
    return ds ? ds->labels : NULL;
}

/* ------------------------------------------------------------------ */
/* Byte source: a file, decompressed on the fly                       */
/* ------------------------------------------------------------------ */

typedef enum { SRC_RAW, SRC_GZIP, SRC_ZSTD } src_kind;

typedef struct idx_src {
    const char *path; /* the file as messages show it (== shown) */
    char shown[SIVEI_PATH_SHOWN];
    FILE *f;
    src_kind kind;
    uint8_t *in; /* IDX_CHUNK bytes of file data */
    size_t in_len, in_pos;
    int in_eof;
    ZSTD_DCtx *zd;
    size_t zhint; /* last ZSTD_decompressStream result; 0 = between frames */
#ifdef SIVE_HAVE_ZLIB
    z_stream zs;
    int zs_live;     /* inflateInit2 succeeded: inflateEnd needed */
    int member_done; /* the last inflate ended a gzip member */
#endif
} idx_src;

static int src_fill(idx_src *s)
{
    s->in_pos = 0;
    s->in_len = fread(s->in, 1, IDX_CHUNK, s->f);
    if (s->in_len < IDX_CHUNK) {
        if (ferror(s->f)) {
            char eb[SIVEI_STRERROR_LEN];
            return sivei_fail(NULL, SIVE_E_IO, "%s: read error: %s", s->path,
                             sivei_strerror(errno, eb, sizeof eb));
        }
        s->in_eof = 1;
    }
    return SIVE_OK;
}

static void src_close(idx_src *s)
{
    if (s->f)
        fclose(s->f);
    free(s->in);
    ZSTD_freeDCtx(s->zd); /* NULL-safe */
#ifdef SIVE_HAVE_ZLIB
    if (s->zs_live)
        inflateEnd(&s->zs);
#endif
    memset(s, 0, sizeof *s);
}

static int is_zstd_magic(const uint8_t *b)
{
    /* A zstd frame, or a skippable frame (magic 0x184D2A5?, little-endian). */
    return (b[0] == 0x28 && b[1] == 0xB5 && b[2] == 0x2F && b[3] == 0xFD) ||
           ((b[0] & 0xF0) == 0x50 && b[1] == 0x2A && b[2] == 0x4D &&
            b[3] == 0x18);
}

/* Open path and pick the decoder from its first bytes.  On failure the
 * caller still calls src_close(). */
static int src_open(idx_src *s, const char *file)
{
    memset(s, 0, sizeof *s);
    /* every message below names the file by its shortened form */
    const char *path = sivei_path_shown(s->shown, sizeof s->shown, file);
    s->path = path;
    s->zhint = 1; /* no frame completed yet */
    s->f = fopen(file, "rb");
    if (!s->f) {
        char eb[SIVEI_STRERROR_LEN];
        return sivei_fail(NULL, SIVE_E_IO, "%s: cannot open: %s", path,
                         sivei_strerror(errno, eb, sizeof eb));
    }
    s->in = malloc(IDX_CHUNK);
    if (!s->in)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", path);
    int rc = src_fill(s); /* a directory fails here with EISDIR */
    if (rc)
        return rc;
    const uint8_t *b = s->in;
    if (s->in_len == 0)
        return sivei_fail(NULL, SIVE_E_FORMAT, "%s: empty file", path);
    if (s->in_len < 4)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: truncated header: the file holds only %zu "
                         "byte(s)", path, s->in_len);
    if (is_zstd_magic(b)) {
        s->kind = SRC_ZSTD;
        s->zd = ZSTD_createDCtx();
        if (!s->zd)
            return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", path);
        return SIVE_OK;
    }
    if (b[0] == 0x1F && b[1] == 0x8B) {
#ifdef SIVE_HAVE_ZLIB
        s->kind = SRC_GZIP;
        int zr = inflateInit2(&s->zs, 15 + 16); /* 16: gzip wrapper only */
        if (zr != Z_OK)
            return sivei_fail(NULL,
                             zr == Z_MEM_ERROR ? SIVE_E_NOMEM : SIVE_E_FORMAT,
                             "%s: cannot start gzip decoding (zlib error %d)",
                             path, zr);
        s->zs_live = 1;
        return SIVE_OK;
#else
        return sivei_fail(NULL, SIVE_E_UNSUPPORTED,
                         "%s: gzip-compressed, but this libsive was built "
                         "without zlib: decompress it first (gunzip) or "
                         "recompress it with zstd", path);
#endif
    }
    if (b[0] == 0 && b[1] == 0) {
        s->kind = SRC_RAW;
        return SIVE_OK;
    }
    return sivei_fail(NULL, SIVE_E_FORMAT,
                     "%s: bad magic %02x %02x %02x %02x: neither IDX "
                     "(00 00 08 nd), gzip (1f 8b) nor zstd (28 b5 2f fd)",
                     path, b[0], b[1], b[2], b[3]);
}

static int read_raw(idx_src *s, uint8_t *dst, size_t want, size_t *pos)
{
    while (*pos < want) {
        if (s->in_pos == s->in_len) {
            if (s->in_eof)
                break;
            int rc = src_fill(s);
            if (rc)
                return rc;
            continue;
        }
        size_t n = s->in_len - s->in_pos;
        if (n > want - *pos)
            n = want - *pos;
        memcpy(dst + *pos, s->in + s->in_pos, n);
        s->in_pos += n;
        *pos += n;
    }
    return SIVE_OK;
}

static int read_zstd(idx_src *s, uint8_t *dst, size_t want, size_t *pos)
{
    while (*pos < want) {
        if (s->in_pos == s->in_len) {
            if (!s->in_eof) {
                int rc = src_fill(s);
                if (rc)
                    return rc;
                continue;
            }
            if (s->zhint == 0)
                break; /* between frames at end of file: end of data */
            /* else the decoder may still hold output: flush it below */
        }
        ZSTD_inBuffer ib = {s->in, s->in_len, s->in_pos};
        ZSTD_outBuffer ob = {dst, want, *pos};
        size_t r = ZSTD_decompressStream(s->zd, &ob, &ib);
        if (ZSTD_isError(r)) {
            if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
                return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory",
                                 s->path);
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: corrupted zstd stream: %s", s->path,
                             ZSTD_getErrorName(r));
        }
        int moved = ib.pos != s->in_pos || ob.pos != *pos;
        s->in_pos = ib.pos;
        *pos = ob.pos;
        s->zhint = r;
        if (!moved) {
            /* Progress is guaranteed while input and output room remain,
             * so no movement means the input ran out inside a frame. */
            if (s->in_pos < s->in_len)
                return sivei_fail(NULL, SIVE_E_FORMAT,
                                 "%s: corrupted zstd stream: decoder stalled",
                                 s->path);
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: truncated zstd stream: the file ends in the "
                             "middle of a frame", s->path);
        }
    }
    return SIVE_OK;
}

#ifdef SIVE_HAVE_ZLIB
static int read_gzip(idx_src *s, uint8_t *dst, size_t want, size_t *pos)
{
    while (*pos < want) {
        if (s->in_pos == s->in_len && !s->in_eof) {
            int rc = src_fill(s);
            if (rc)
                return rc;
            continue;
        }
        if (s->member_done) {
            if (s->in_pos == s->in_len)
                break; /* the last member ended at end of file */
            inflateReset(&s->zs); /* more bytes: another member follows */
            s->member_done = 0;
        }
        size_t avail = s->in_len - s->in_pos;
        size_t room = want - *pos;
        if (room > (size_t)1 << 30)
            room = (size_t)1 << 30; /* avail_out is a uInt */
        s->zs.next_in = s->in + s->in_pos;
        s->zs.avail_in = (uInt)avail;
        s->zs.next_out = dst + *pos;
        s->zs.avail_out = (uInt)room;
        int zr = inflate(&s->zs, Z_NO_FLUSH);
        s->in_pos += avail - s->zs.avail_in;
        *pos += room - s->zs.avail_out;
        if (zr == Z_STREAM_END) {
            s->member_done = 1;
            continue;
        }
        if (zr == Z_OK)
            continue;
        if (zr == Z_BUF_ERROR) /* no progress possible: input exhausted */
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: truncated gzip stream: the file ends in the "
                             "middle of a member", s->path);
        if (zr == Z_MEM_ERROR)
            return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", s->path);
        return sivei_fail(NULL, SIVE_E_FORMAT, "%s: corrupted gzip stream: %s",
                         s->path, s->zs.msg ? s->zs.msg : "inflate error");
    }
    return SIVE_OK;
}
#endif

/* Read up to want decoded bytes; *got < want only at the clean end of the
 * data.  Errors (I/O, corrupted or truncated stream) return a status. */
static int src_read(idx_src *s, uint8_t *dst, size_t want, size_t *got)
{
    *got = 0;
    switch (s->kind) {
    case SRC_ZSTD: return read_zstd(s, dst, want, got);
#ifdef SIVE_HAVE_ZLIB
    case SRC_GZIP: return read_gzip(s, dst, want, got);
#endif
    default: return read_raw(s, dst, want, got);
    }
}

/* ------------------------------------------------------------------ */
/* IDX arrays                                                         */
/* ------------------------------------------------------------------ */

static const char *idx_type_name(uint8_t t)
{
    switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown type";
    }
}

/* "10000 x 28 x 28" */
static void dims_text(char *buf, size_t len, const uint64_t *dims, int nd)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < nd && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%llu", i ? " x " : "",
                         (unsigned long long)dims[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* The payload, into a buffer that grows with the data actually decoded. */
static int read_payload(idx_src *s, uint64_t total, uint8_t **data,
                        size_t *have)
{
    size_t cap = total < IDX_FIRST_ALLOC ? (size_t)total : IDX_FIRST_ALLOC;
    uint8_t *buf = malloc(cap);
    *have = 0;
    if (!buf)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", s->path);
    for (;;) {
        size_t got;
        int rc = src_read(s, buf + *have, cap - *have, &got);
        *have += got;
        if (rc) {
            free(buf);
            return rc;
        }
        if (*have < cap || cap == total)
            break;
        size_t next = (uint64_t)cap * 2 < total ? cap * 2 : (size_t)total;
        uint8_t *grown = realloc(buf, next);
        if (!grown) {
            free(buf);
            return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory",
                             s->path);
        }
        buf = grown;
        cap = next;
    }
    *data = buf;
    return SIVE_OK;
}

/* Bytes after the header + payload, for the message (raw regular files). */
static int raw_trailing(idx_src *s, uint64_t used, unsigned long long *extra)
{
    struct stat st;
    if (fstat(fileno(s->f), &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size <= used)
        return 0;
    *extra = (unsigned long long)((uint64_t)st.st_size - used);
    return 1;
}

/* Check the header (magic, type, dimensions, caps); total = payload size. */
static int parse_header(idx_src *s, int want_nd, uint64_t *dims,
                        uint64_t *total)
{
    const char *path = s->path;
    const char *where = s->kind == SRC_RAW ? "file" : "decompressed data";
    uint8_t head[4 * 3];
    size_t got;
    int rc = src_read(s, head, 4, &got);
    if (rc)
        return rc;
    if (got < 4)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: truncated header: the %s holds %zu byte(s)",
                         path, where, got);
    if (head[0] != 0 || head[1] != 0)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: bad magic %02x %02x %02x %02x in the %s: "
                         "not an IDX file (00 00 08 nd)",
                         path, head[0], head[1], head[2], head[3], where);
    if (head[2] != IDX_TYPE_UBYTE)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: element type 0x%02X (%s) is not supported: "
                         "only 0x08 (unsigned byte) is",
                         path, head[2], idx_type_name(head[2]));
    int nd = head[3];
    if (nd != want_nd) {
        const char *hint = "";
        if (want_nd == 3 && nd == 1)
            hint = ": is this a label file?";
        else if (want_nd == 1 && nd == 3)
            hint = ": is this an image file?";
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: %d dimension(s), expected %d (%s)%s", path, nd,
                         want_nd,
                         want_nd == 3 ? "count x rows x cols" : "count", hint);
    }
    rc = src_read(s, head, 4 * (size_t)nd, &got);
    if (rc)
        return rc;
    if (got < 4 * (size_t)nd)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: truncated header: %zu of the %d bytes of "
                         "dimensions present", path, got, 4 * nd);
    for (int i = 0; i < nd; i++) {
        const uint8_t *p = head + 4 * i;
        dims[i] = (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 |
                  (uint64_t)p[2] << 8 | p[3];
        if (dims[i] == 0 || dims[i] > IDX_MAX_DIM)
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: dimension %d is %llu, must be in [1, %llu]",
                             path, i, (unsigned long long)dims[i],
                             (unsigned long long)IDX_MAX_DIM);
    }
    char text[80];
    dims_text(text, sizeof text, dims, nd);
    uint64_t t = 1;
    for (int i = 0; i < nd; i++) {
        if (t > IDX_MAX_BYTES / dims[i] || t * dims[i] > SIZE_MAX)
            return sivei_fail(NULL, SIVE_E_FORMAT,
                             "%s: header says %s bytes, above the limit of "
                             "%llu", path, text,
                             (unsigned long long)IDX_MAX_BYTES);
        t *= dims[i];
    }
    *total = t;
    return SIVE_OK;
}

/* Read one whole IDX array of unsigned bytes with want_nd dimensions. */
static int idx_read(const char *path, int want_nd, uint64_t *dims,
                    uint8_t **data)
{
    idx_src s;
    uint64_t total = 0;
    uint8_t *buf = NULL;
    size_t have = 0;
    *data = NULL;
    int rc = src_open(&s, path);
    if (!rc)
        rc = parse_header(&s, want_nd, dims, &total);
    if (!rc)
        rc = read_payload(&s, total, &buf, &have);
    if (rc) {
        src_close(&s);
        return rc;
    }
    const char *where = s.kind == SRC_RAW ? "file" : "decompressed data";
    char text[80];
    dims_text(text, sizeof text, dims, want_nd);
    if (have < total) {
        rc = sivei_fail(NULL, SIVE_E_FORMAT,
                       "%s: truncated: header says %s = %llu bytes, %s "
                       "holds %zu", s.path, text, (unsigned long long)total,
                       where, have);
    } else {
        /* One more byte: also drives the decoder through the frame's end
         * so that checksums are verified. */
        uint8_t extra;
        size_t got;
        rc = src_read(&s, &extra, 1, &got);
        unsigned long long n;
        if (!rc && got) {
            if (s.kind == SRC_RAW &&
                raw_trailing(&s, 4 + 4 * (uint64_t)want_nd + total, &n))
                rc = sivei_fail(NULL, SIVE_E_FORMAT,
                               "%s: %llu trailing byte(s) after the %s = %llu "
                               "bytes the header announces", s.path, n, text,
                               (unsigned long long)total);
            else
                rc = sivei_fail(NULL, SIVE_E_FORMAT,
                               "%s: trailing bytes: the %s is longer than the "
                               "%s = %llu bytes the header announces", s.path,
                               where, text, (unsigned long long)total);
        }
    }
    src_close(&s);
    if (rc) {
        free(buf);
        return rc;
    }
    *data = buf;
    return SIVE_OK;
}

int sive_dataset_load_idx(sive_dataset **out, const char *images_path,
                          const char *labels_path)
{
    if (out)
        *out = NULL;
    if (!out || !images_path || !labels_path)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_load_idx: NULL argument");
    uint64_t idims[3], ldims[1];
    uint8_t *pixels, *labels;
    int rc = idx_read(images_path, 3, idims, &pixels);
    if (rc)
        return rc;
    rc = idx_read(labels_path, 1, ldims, &labels);
    if (rc) {
        free(pixels);
        return rc;
    }
    if (ldims[0] != idims[0]) {
        char ls[SIVEI_PATH_SHOWN], is[SIVEI_PATH_SHOWN];
        free(pixels);
        free(labels);
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s holds %llu labels but %s holds %llu images",
                         sivei_path_shown(ls, sizeof ls, labels_path),
                         (unsigned long long)ldims[0],
                         sivei_path_shown(is, sizeof is, images_path),
                         (unsigned long long)idims[0]);
    }
    return dataset_adopt(out, pixels, labels, (size_t)idims[0],
                         (size_t)idims[1], (size_t)idims[2]);
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

typedef struct idx_sink {
    sivei_atomic at; /* the temporary file; at.shown names the target */
    ZSTD_CCtx *zc;   /* NULL: plain IDX */
    uint8_t *out;    /* IDX_CHUNK bytes of compressed output */
} idx_sink;

/* Remove the temporary file, if it still exists, and free the sink. */
static void sink_discard(idx_sink *k)
{
    sivei_atomic_abort(&k->at);
    free(k->out);
    ZSTD_freeCCtx(k->zc); /* NULL-safe */
    k->out = NULL;
    k->zc = NULL;
}

static int sink_open(idx_sink *k, const char *path, int level, uint64_t size)
{
    char err[SIVE_ERRMSG_LEN];
    memset(k, 0, sizeof *k);
    int rc = sivei_atomic_open(&k->at, path, err);
    if (rc)
        return sivei_fail(NULL, rc, "%s", err);
    if (level == 0)
        return SIVE_OK;
    k->zc = ZSTD_createCCtx();
    k->out = malloc(IDX_CHUNK);
    if (!k->zc || !k->out)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory",
                         k->at.shown);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(k->zc, ZSTD_c_compressionLevel,
                                            level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(k->zc, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(k->zc, size)))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: zstd rejected level %d", k->at.shown, level);
    return SIVE_OK;
}

static int sink_put(idx_sink *k, const void *data, size_t n)
{
    char err[SIVE_ERRMSG_LEN];
    int rc = sivei_atomic_write(&k->at, data, n, err);
    return rc ? sivei_fail(NULL, rc, "%s", err) : SIVE_OK;
}

/* Compress (or copy) n bytes; with end set, finish the zstd frame. */
static int sink_write(idx_sink *k, const uint8_t *data, size_t n, int end)
{
    if (!k->zc)
        return sink_put(k, data, n);
    ZSTD_inBuffer ib = {data, n, 0};
    ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_continue;
    for (;;) {
        ZSTD_outBuffer ob = {k->out, IDX_CHUNK, 0};
        size_t r = ZSTD_compressStream2(k->zc, &ob, &ib, mode);
        if (ZSTD_isError(r))
            return sivei_fail(NULL,
                             ZSTD_getErrorCode(r) ==
                                     ZSTD_error_memory_allocation
                                 ? SIVE_E_NOMEM
                                 : SIVE_E_IO,
                             "%s: zstd compression failed: %s",
                             k->at.shown, ZSTD_getErrorName(r));
        int rc = sink_put(k, k->out, ob.pos);
        if (rc)
            return rc;
        if (end ? r == 0 : ib.pos == ib.size)
            return SIVE_OK;
    }
}

/* Flush everything to disk; the file is complete under its temporary name
 * (still open and locked until the rename). */
static int sink_finish(idx_sink *k)
{
    char err[SIVE_ERRMSG_LEN];
    int rc = sink_write(k, NULL, 0, 1);
    if (!rc && (rc = sivei_atomic_finish(&k->at, err)) != SIVE_OK)
        sivei_fail(NULL, rc, "%s", err);
    return rc;
}

/* Header + payload of one IDX array into a temporary file. */
static int write_idx(idx_sink *k, const char *path, int level,
                     const uint8_t *data, const size_t *dims, int nd)
{
    uint8_t head[4 + 4 * 3] = {0, 0, IDX_TYPE_UBYTE, (uint8_t)nd};
    uint64_t total = 1;
    for (int i = 0; i < nd; i++) {
        uint32_t d = (uint32_t)dims[i]; /* <= 2^24 by construction */
        head[4 + 4 * i] = (uint8_t)(d >> 24);
        head[5 + 4 * i] = (uint8_t)(d >> 16);
        head[6 + 4 * i] = (uint8_t)(d >> 8);
        head[7 + 4 * i] = (uint8_t)d;
        total *= dims[i];
    }
    size_t hlen = 4 + 4 * (size_t)nd;
    int rc = sink_open(k, path, level, hlen + total);
    if (!rc)
        rc = sink_write(k, head, hlen, 0);
    if (!rc)
        rc = sink_write(k, data, (size_t)total, 0);
    if (!rc)
        rc = sink_finish(k);
    return rc;
}

/* Rename both complete temporaries over their targets, images first. */
static int commit_both(idx_sink *img, idx_sink *lab, const char *images_path,
                       const char *labels_path)
{
    char err[SIVE_ERRMSG_LEN];
    int rc = sivei_atomic_commit(&img->at, err);
    if (rc)
        return sivei_fail(NULL, rc, "%s", err);
    /* Last line of defence for what the check before writing cannot see
     * (a case-insensitive file system, a link created meanwhile): the
     * labels must not replace the images just renamed into place. */
    if (sivei_same_target(images_path, labels_path))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_save_idx: %s turned out to be the file "
                         "the images were written to; labels not written",
                         lab->at.shown);
    rc = sivei_atomic_commit(&lab->at, err);
    return rc ? sivei_fail(NULL, rc, "%s", err) : SIVE_OK;
}

int sive_dataset_save_idx(const sive_dataset *ds, const char *images_path,
                          const char *labels_path, int zstd_level)
{
    if (!ds || !images_path || !labels_path)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_save_idx: NULL argument");
    if (sivei_same_target(images_path, labels_path)) {
        char is[SIVEI_PATH_SHOWN], ls[SIVEI_PATH_SHOWN];
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_save_idx: %s and %s name the same file: "
                         "the labels would replace the images",
                         sivei_path_shown(is, sizeof is, images_path),
                         sivei_path_shown(ls, sizeof ls, labels_path));
    }
    if (zstd_level < 0 || zstd_level > ZSTD_maxCLevel())
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dataset_save_idx: zstd level %d outside "
                         "0..%d (0 = uncompressed)", zstd_level,
                         ZSTD_maxCLevel());
    const size_t idims[3] = {ds->count, ds->rows, ds->cols};
    idx_sink img, lab;
    memset(&lab, 0, sizeof lab);
    int rc = write_idx(&img, images_path, zstd_level, ds->pixels, idims, 3);
    if (!rc)
        rc = write_idx(&lab, labels_path, zstd_level, ds->labels, idims, 1);
    /* Both complete and on disk: only now replace the targets. */
    if (!rc)
        rc = commit_both(&img, &lab, images_path, labels_path);
    sink_discard(&img); /* removes whatever temporary is left */
    sink_discard(&lab);
    return rc;
}
