/* Result files: a (partial) run saved so that another process can merge
 * it (job arrays, MPI ranks).
 *
 * Layout (all integers little-endian, doubles as their IEEE-754 bits):
 *
 *   off  0  magic "SIVERES\0"                              8 bytes
 *        8  format version (3; 1 and 2 are read too)       u32
 *       12  reserved (0)                                   u32
 *       16  payload length P                               u64
 *       24  payload                                        P bytes
 *   24+P    FNV-1a 64 of bytes [0, 24+P)                   u64
 *
 * Payload, as 8-byte words unless noted:
 *   options: t base_lr h c_h burn_in anchor (f64); h_absolute steps groups
 *   eval_batch grad_batch chains threads replacement eval_stride
 *   chain_begin chain_end seed (i64/u64); version 2 on: control_variate
 *   (i64); version 3 on: grad_control_variate precondition (i64); h eta
 *   (f64); begin end dtype dim n_examples theta_hash; version 3 on: identity
 *   (the model's, 0 = none); status callback_code; errmsg length + bytes;
 *   note length + bytes; then per chain c in [begin, end): status
 *   stop_step steps_run and the SIVEI_N_TRACES traces of steps_run f64.
 *
 * The statistics are not stored: loading recomputes them from the traces
 * with the code a run uses, so a file cannot carry numbers that disagree
 * with its traces.  The file is checked whole (length, hash) before any
 * field is read, and every field is then range-checked, so damage gives
 * SIVE_E_FORMAT and never a result. */
#include "fileio.h"
#include "probe_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "SIVERES"  /* with its NUL: 8 bytes */
#define VERSION 3u       /* 0.3: the model's identity, the sampler options */
#define VERSION_OLDEST 1u /* 0.2.0: no control_variate field (it was 0) */
#define HEAD 24
#define NOTE_MAX ((uint64_t)1 << 20)

/* ---- a growing byte buffer (writing) ---- */

typedef struct wbuf {
    unsigned char *p;
    size_t len, cap;
    int oom;
} wbuf;

static void put(wbuf *b, const void *src, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_u64(wbuf *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    put(b, x, 8);
}

static void put_f64(wbuf *b, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    put_u64(b, u);
}

static void put_text(wbuf *b, const char *s, size_t n)
{
    put_u64(b, n);
    put(b, s, n);
}

static void put_options(wbuf *b, const sivei_options *o)
{
    const double d[] = {o->t, o->base_lr, o->h, o->c_h, o->burn_in, o->anchor};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        put_f64(b, d[i]);
    const int64_t v[] = {o->h_absolute, o->steps, o->groups, o->eval_batch, o->grad_batch,
                         o->chains, o->threads, o->replacement, o->eval_stride,
                         o->chain_begin, o->chain_end, (int64_t)o->seed,
                         o->control_variate, o->grad_control_variate, o->precondition};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        put_u64(b, (uint64_t)v[i]);
}

/* The whole file in memory. */
static void encode(wbuf *b, const sive_result *r, const char *note, size_t note_len)
{
    put(b, MAGIC, 8);
    unsigned char ver[8] = {VERSION & 0xff, 0, 0, 0, 0, 0, 0, 0};
    put(b, ver, 8);
    put_u64(b, 0); /* payload length, patched below */
    put_options(b, &r->opt);
    put_f64(b, r->h);
    put_f64(b, r->eta);
    const int64_t v[] = {r->begin, r->end, r->dtype, (int64_t)r->dim,
                         (int64_t)r->n_examples, (int64_t)r->theta_hash,
                         (int64_t)r->identity, r->status, r->callback_code};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        put_u64(b, (uint64_t)v[i]);
    put_text(b, r->errmsg, strlen(r->errmsg));
    put_text(b, note, note_len);
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        put_u64(b, (uint64_t)(int64_t)ch->status);
        put_u64(b, (uint64_t)ch->stop_step);
        put_u64(b, (uint64_t)ch->steps_run);
        for (int k = 0; k < SIVEI_N_TRACES; k++)
            for (int64_t m = 0; m < ch->steps_run; m++)
                put_f64(b, ch->trace[k][m]);
    }
    if (b->oom)
        return;
    size_t plen = b->len - HEAD;
    for (int i = 0; i < 8; i++)
        b->p[16 + i] = (unsigned char)((uint64_t)plen >> (8 * i));
    put_u64(b, sivei_fnv1a64(SIVEI_FNV_OFFSET, b->p, b->len));
}

/* The encoded result into b; messages name shown (a path or "result
 * bytes"). */
static int to_bytes(const sive_result *r, const char *note, const char *shown, wbuf *b)
{
    size_t note_len = note ? strlen(note) : 0;
    if (note_len > NOTE_MAX)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: note of %zu bytes is above 1 MiB",
                         shown, note_len);
    encode(b, r, note ? note : "", note_len);
    if (b->oom) {
        free(b->p);
        b->p = NULL;
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", shown);
    }
    return SIVE_OK;
}

int sive_result_to_bytes(const sive_result *r, const char *note, void **bytes, size_t *len)
{
    if (bytes)
        *bytes = NULL;
    if (len)
        *len = 0;
    if (!r || !bytes || !len)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_to_bytes: NULL argument");
    wbuf b = {0};
    int rc = to_bytes(r, note, "result bytes", &b);
    if (rc)
        return rc;
    *bytes = b.p;
    *len = b.len;
    sivei_clear_error();
    return SIVE_OK;
}

int sive_result_save(const sive_result *r, const char *path, const char *note)
{
    if (!r || !path)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_save: NULL argument");
    char shown[SIVEI_PATH_SHOWN], err[SIVE_ERRMSG_LEN];
    sivei_path_shown(shown, sizeof shown, path);
    wbuf b = {0};
    int rc = to_bytes(r, note, shown, &b);
    if (rc)
        return rc;
    sivei_atomic a;
    rc = sivei_atomic_open(&a, path, err);
    if (!rc) {
        rc = sivei_atomic_write(&a, b.p, b.len, err);
        if (!rc)
            rc = sivei_atomic_commit(&a, err);
        else
            sivei_atomic_abort(&a);
    }
    free(b.p);
    if (rc)
        return sivei_fail(NULL, rc, "%s", err);
    sivei_clear_error();
    return SIVE_OK;
}

/* ---- reading ---- */

typedef struct rbuf {
    const unsigned char *p;
    size_t len, at;
    uint64_t version; /* of the file being read */
    int bad; /* ran past the end */
} rbuf;

static uint64_t get_u64(rbuf *b)
{
    if (b->bad || b->len - b->at < 8) {
        b->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | b->p[b->at + (size_t)i];
    b->at += 8;
    return v;
}

static int64_t get_i64(rbuf *b) { return (int64_t)get_u64(b); }

static double get_f64(rbuf *b)
{
    uint64_t u = get_u64(b);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* A length-prefixed text of at most max bytes, borrowed from the buffer. */
static const char *get_text(rbuf *b, uint64_t max, size_t *n)
{
    uint64_t len = get_u64(b);
    if (b->bad || len > max || len > b->len - b->at) {
        b->bad = 1;
        return NULL;
    }
    *n = (size_t)len;
    const char *s = (const char *)b->p + b->at;
    b->at += (size_t)len;
    return s;
}

static void get_options(rbuf *b, sivei_options *o)
{
    double *d[] = {&o->t, &o->base_lr, &o->h, &o->c_h, &o->burn_in, &o->anchor};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        *d[i] = get_f64(b);
    int64_t ha = get_i64(b);
    o->h_absolute = ha == 1;
    if (ha != 0 && ha != 1)
        b->bad = 1;
    int64_t *v[] = {&o->steps, &o->groups, &o->eval_batch, &o->grad_batch, &o->chains,
                    &o->threads, &o->replacement, &o->eval_stride, &o->chain_begin,
                    &o->chain_end};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        *v[i] = get_i64(b);
    o->seed = get_u64(b);
    o->control_variate = b->version >= 2 ? get_i64(b) : 0;
    o->grad_control_variate = b->version >= 3 ? get_i64(b) : 0;
    o->precondition = b->version >= 3 ? get_i64(b) : 0;
}

/* Every option inside its table bounds (NaN only where the table allows
 * none: the anchor and the radius mode not in use), and a tail a run
 * would have accepted. */
static int options_valid(const sivei_options *o)
{
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        int64_t iv = 0;
        double dv = 0.0;
        if (sivei_options_get(o, in->id, in->type, &iv, &dv, NULL))
            return 0;
        if (in->type == SIVE_TYPE_INT && in->id != SIVE_OPT_SEED &&
            (iv < in->int_lo || iv > in->int_hi))
            return 0;
        if (in->type == SIVE_TYPE_DOUBLE && !isnan(dv) &&
            !((in->lo_open ? dv > in->double_lo : dv >= in->double_lo) &&
              (in->hi_open ? dv < in->double_hi : dv <= in->double_hi)))
            return 0;
        if (in->type == SIVE_TYPE_DOUBLE && isnan(dv) && in->id != SIVE_OPT_ANCHOR &&
            !((in->id == SIVE_OPT_H && !o->h_absolute) ||
              (in->id == SIVE_OPT_C_H && o->h_absolute)))
            return 0;
    }
    return sivei_tail_count(o) >= 4;
}

/* The header fields after the options, checked against each other. */
typedef struct head {
    double h, eta;
    int64_t begin, end, dtype, status, cb;
    uint64_t dim, n_examples, theta_hash, identity;
} head;

static int head_valid(const head *hd, const sivei_options *o)
{
    const int st = (int)hd->status;
    return hd->begin >= 0 && hd->begin < hd->end && hd->end <= o->chains &&
           (hd->dtype == SIVE_F32 || hd->dtype == SIVE_F64) && hd->dim >= 1 &&
           hd->h > 0.0 && isfinite(hd->h) && isfinite(hd->eta) &&
           (st == SIVE_OK || st == SIVE_E_DIVERGED || st == SIVE_E_CALLBACK ||
            st == SIVE_E_CANCELLED) && hd->status == st && hd->cb == (int)hd->cb;
}

/* Chain c's record into r: its traces are allocated only after their
 * length has been checked against the bytes left, so no field of the
 * file sets an allocation larger than the file. */
static int get_chain(rbuf *b, sive_result *r, int32_t c)
{
    sivei_chain_out *ch = sivei_chain(r, c);
    int64_t st = get_i64(b), stop = get_i64(b), n = get_i64(b);
    if (b->bad || st < SIVE_CHAIN_OK || st > SIVE_CHAIN_ABORTED || n < 0 ||
        n > r->opt.steps || stop < 0 || stop > r->opt.steps ||
        (st == SIVE_CHAIN_OK && (n != r->opt.steps || stop != r->opt.steps)) ||
        (uint64_t)n * 8u * SIVEI_N_TRACES > b->len - b->at)
        return b->bad = 1, SIVE_E_FORMAT;
    ch->status = (sive_chain_status)st;
    ch->stop_step = stop;
    ch->steps_run = n;
    if (sivei_chain_traces(ch, n))
        return SIVE_E_NOMEM;
    for (int k = 0; k < SIVEI_N_TRACES; k++)
        for (int64_t m = 0; m < n; m++)
            ch->trace[k][m] = get_f64(b);
    return SIVE_OK;
}

/* The chains agree with the run's status: a run that ended OK or
 * DIVERGED has no chain stopped by a callback or a cancel, OK has a
 * finished chain and DIVERGED none. */
static int chains_agree(const sive_result *r, int status)
{
    int ok = 0, stopped = 0;
    for (int32_t c = r->begin; c < r->end; c++) {
        sive_chain_status st = sivei_chain(r, c)->status;
        ok += st == SIVE_CHAIN_OK;
        stopped += st == SIVE_CHAIN_CALLBACK || st == SIVE_CHAIN_ABORTED;
    }
    if (status == SIVE_OK)
        return !stopped && ok > 0;
    if (status == SIVE_E_DIVERGED)
        return !stopped && ok == 0;
    return 1;
}

/* The payload after a verified header and hash; NULL (*rc set) when a
 * field is out of range. */
static sive_result *decode(rbuf *b, char **note, int *rc)
{
    sivei_options o;
    memset(&o, 0, sizeof o);
    get_options(b, &o);
    head hd;
    hd.h = get_f64(b);
    hd.eta = get_f64(b);
    int64_t *v[] = {&hd.begin, &hd.end, &hd.dtype};
    for (size_t i = 0; i < 3; i++)
        *v[i] = get_i64(b);
    hd.dim = get_u64(b);
    hd.n_examples = get_u64(b);
    hd.theta_hash = get_u64(b);
    hd.identity = b->version >= 3 ? get_u64(b) : 0;
    hd.status = get_i64(b);
    hd.cb = get_i64(b);
    size_t elen = 0, nlen = 0;
    const char *emsg = get_text(b, SIVE_ERRMSG_LEN - 1, &elen);
    const char *ntxt = get_text(b, NOTE_MAX, &nlen);
    *rc = SIVE_E_FORMAT;
    if (b->bad || !options_valid(&o) || !head_valid(&hd, &o))
        return NULL;
    /* every chain record takes at least 3 words: a range the payload
     * cannot hold is refused before anything is allocated for it */
    if ((uint64_t)(hd.end - hd.begin) * 24u > b->len - b->at)
        return NULL;
    sive_result *r = sivei_result_alloc(&o, hd.h, hd.eta, (int32_t)hd.begin,
                                        (int32_t)hd.end, 0);
    char *n = note ? malloc(nlen + 1) : NULL;
    if (!r || (note && !n)) {
        *rc = SIVE_E_NOMEM;
        sive_result_free(r);
        free(n);
        return NULL;
    }
    int crc = SIVE_OK;
    for (int32_t c = r->begin; c < r->end && !crc; c++)
        crc = get_chain(b, r, c);
    if (crc || b->at != b->len || !chains_agree(r, (int)hd.status)) {
        *rc = crc == SIVE_E_NOMEM ? SIVE_E_NOMEM : SIVE_E_FORMAT;
        sive_result_free(r);
        free(n);
        return NULL;
    }
    r->dtype = (int32_t)hd.dtype;
    r->dim = hd.dim;
    r->n_examples = hd.n_examples;
    r->theta_hash = hd.theta_hash;
    r->identity = hd.identity;
    memcpy(r->errmsg, emsg, elen);
    r->errmsg[elen] = '\0';
    if (n) {
        memcpy(n, ntxt, nlen);
        n[nlen] = '\0';
        *note = n;
    }
    r->status = (int)hd.status;
    r->callback_code = (int)hd.cb;
    *rc = SIVE_OK;
    return r;
}

/* The fixed header: magic, version, and a payload length that matches
 * the file's size, all checked before anything is allocated for the
 * payload (a junk file costs HEAD bytes, not its size). */
static int check_head(const unsigned char *p, size_t got, uint64_t size, const char *shown)
{
    if (got < HEAD || size < HEAD + 8 || memcmp(p, MAGIC, 8) != 0)
        return sivei_fail(NULL, SIVE_E_FORMAT, "%s: not a sive result file%s", shown,
                         size < HEAD + 8 ? " (too short)" : "");
    rbuf b = {.p = p, .len = HEAD, .at = 8};
    uint64_t ver = get_u64(&b), plen = get_u64(&b);
    if (ver < VERSION_OLDEST || ver > VERSION)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: result file format version %llu (this library reads %u to %u)",
                         shown, (unsigned long long)ver, VERSION_OLDEST, VERSION);
    if (plen != size - HEAD - 8)
        return sivei_fail(NULL, SIVE_E_FORMAT,
                         "%s: truncated or damaged: %llu bytes, the header says %llu", shown,
                         (unsigned long long)size,
                         plen > UINT64_MAX - HEAD - 8 ? (unsigned long long)plen
                                                      : (unsigned long long)plen + HEAD + 8);
    return SIVE_OK;
}

/* n bytes from fd; SIVE_E_IO on an error or when the file ends early. */
static int read_all(int fd, unsigned char *p, size_t n, const char *shown)
{
    char eb[SIVEI_STRERROR_LEN];
    while (n > 0) {
        ssize_t k = read(fd, p, n > ((size_t)1 << 30) ? (size_t)1 << 30 : n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return sivei_fail(NULL, k < 0 ? SIVE_E_IO : SIVE_E_FORMAT, "%s: read failed: %s",
                             shown, k < 0 ? sivei_strerror(errno, eb, sizeof eb)
                                          : "the file shrank while being read");
        p += k;
        n -= (size_t)k;
    }
    return SIVE_OK;
}

/* The file into memory once its header has been checked against its
 * size; only a regular file is opened (sivei_open_regular). */
static int slurp(const char *path, const char *shown, unsigned char **out, size_t *len)
{
    struct stat fst;
    char err[SIVE_ERRMSG_LEN];
    int rc, fd = sivei_open_regular(path, shown, &fst, &rc, err);
    if (fd < 0)
        return sivei_fail(NULL, rc, "%s", err);
    unsigned char head[HEAD], *p = NULL;
    rc = SIVE_OK;
    if ((uint64_t)fst.st_size > SIZE_MAX - 1)
        rc = sivei_fail(NULL, SIVE_E_FORMAT, "%s: not a sive result file (too large)", shown);
    size_t size = rc ? 0 : (size_t)fst.st_size, got = size < HEAD ? size : HEAD;
    if (!rc && !(rc = read_all(fd, head, got, shown)))
        rc = check_head(head, got, size, shown);
    if (!rc && !(p = malloc(size)))
        rc = sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory for %zu bytes", shown, size);
    if (!rc) {
        memcpy(p, head, HEAD);
        rc = read_all(fd, p + HEAD, size - HEAD, shown);
    }
    close(fd);
    if (rc) {
        free(p);
        return rc;
    }
    *out = p;
    *len = size;
    return SIVE_OK;
}

/* The hash of the whole file (its header was checked by slurp). */
static int check_hash(const unsigned char *p, size_t len, const char *shown)
{
    rbuf b = {.p = p, .len = len, .at = len - 8};
    if (get_u64(&b) != sivei_fnv1a64(SIVEI_FNV_OFFSET, p, len - 8))
        return sivei_fail(NULL, SIVE_E_FORMAT, "%s: checksum mismatch: the file is damaged",
                         shown);
    return SIVE_OK;
}

/* A result from len bytes whose header has been checked against len:
 * the hash, every field, then the statistics recomputed. */
static int from_bytes(const unsigned char *p, size_t len, const char *shown,
                      sive_result **out, char **note)
{
    int rc = check_hash(p, len, shown);
    sive_result *r = NULL;
    if (!rc) {
        rbuf b = {.p = p, .len = len - 8, .at = HEAD, .version = p[8]};
        r = decode(&b, note, &rc);
        if (rc == SIVE_E_FORMAT)
            sivei_fail(NULL, rc, "%s: a field is out of range: the file is damaged", shown);
        else if (rc)
            sivei_fail(NULL, rc, "%s: out of memory", shown);
    }
    if (!rc && (rc = sivei_result_summarise(r)))
        sivei_fail(NULL, rc, "%s: out of memory while summarising", shown);
    if (rc) {
        sive_result_free(r);
        if (note) {
            free(*note);
            *note = NULL;
        }
        return rc;
    }
    *out = r;
    sivei_clear_error();
    return SIVE_OK;
}

int sive_result_load(const char *path, sive_result **out, char **note)
{
    if (out)
        *out = NULL;
    if (note)
        *note = NULL;
    if (!path || !out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_load: NULL argument");
    char shown[SIVEI_PATH_SHOWN];
    sivei_path_shown(shown, sizeof shown, path);
    unsigned char *p = NULL;
    size_t len = 0;
    int rc = slurp(path, shown, &p, &len);
    if (!rc)
        rc = from_bytes(p, len, shown, out, note);
    free(p);
    return rc;
}

int sive_result_from_bytes(const void *bytes, size_t len, sive_result **out, char **note)
{
    if (out)
        *out = NULL;
    if (note)
        *note = NULL;
    if ((!bytes && len) || !out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_from_bytes: NULL argument");
    const char *shown = "result bytes";
    int rc = check_head(bytes, len, len, shown); /* len 0: too short, as an empty file */
    return rc ? rc : from_bytes(bytes, len, shown, out, note);
}
