/* Result files: a (partial) run saved so that another process can merge
 * it (job arrays, MPI ranks).
 *
 * Layout (all integers little-endian, doubles as their IEEE-754 bits):
 *
 *   off  0  magic "SIVERES\0"                              8 bytes
 *        8  format version (5; 1 to 4 are read too)        u32
 *       12  reserved (0)                                   u32
 *       16  payload length P                               u64
 *       24  payload                                        P bytes
 *   24+P    FNV-1a 64 of bytes [0, 24+P)                   u64
 *
 * Payload, as 8-byte words unless noted:
 *   options.  Version 4: a count n, then n records of two words, one per
 *   option of the table in ascending id: (id | type << 32 | flags << 40),
 *   then the value (i64, or f64 bits; the radius mode not in use is NaN,
 *   which is how the mode is stored).  Flag bit 0 "ignorable": the value
 *   is the option's default, which by the project's rule is the behaviour
 *   of a library without the option, so a reader that does not know the id
 *   may drop the record; an unknown id without it is refused.  A known
 *   option without a record takes its default (written before the option
 *   existed).  metropolis, kron_every and radius_lookahead are the
 *   exception: a result holds the values its run resolved (never their
 *   "auto" default -1), 0 is flagged ignorable and a missing record reads
 *   as 0.  Versions 1-3, by position: t base_lr h c_h burn_in anchor
 *   (f64); h_absolute steps groups eval_batch grad_batch chains threads
 *   replacement eval_stride chain_begin chain_end seed (i64/u64); version
 *   2 on: control_variate (i64); version 3: grad_control_variate
 *   precondition (i64).
 *   Then: h eta (f64); begin end dtype dim n_examples theta_hash; version
 *   3 on: identity (the model's, 0 = none); status callback_code; errmsg
 *   length + bytes; note length + bytes; version 5 on: the run notes
 *   (length + bytes: the health text's lines the run appended after the
 *   flags' text, each ending in a newline, no NUL; empty when none; a
 *   loaded result's health text is the flags' text recomputed from the
 *   traces followed by these); then per chain c in [begin, end):
 *   status stop_step steps_run and the SIVEI_N_TRACES traces of steps_run
 *   f64; then, only for a weight-restricted probe (sive_probe_set_params),
 *   the word "PARAMS\0\0", the number of ranges R and R (begin, end)
 *   pairs; then, only with evaluation views (sive_probe_add_eval_view),
 *   the word "VIEWS\0\0\0", their number K and per view its name (length
 *   + bytes), its example count, and per chain its LBAR then S2 over the
 *   chain's steps_run; then, only when a view used control variates, the
 *   word "VIEWCV\0\0" and per view 1 if it did, else 0 (u64; a view
 *   without it did not) (a reader without these sections refuses such a
 *   file: it has bytes after the chains).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "SIVERES"  /* with its NUL: 8 bytes */
#define VERSION 5u       /* 0.3: the run notes (format 4: options as records) */
#define VERSION_NOTES 5u /* the first version with the run notes */
#define VERSION_RECORDS 4u /* the first version with option records */
#define VERSION_OLDEST 1u /* 0.2.0: no control_variate field (it was 0) */
#define HEAD 24
#define NOTE_MAX ((uint64_t)1 << 20)
/* the run notes: a merge lists a line per part (an mpirun probe merges a
 * part per chain), so far beyond the caller's note; the writer refuses
 * more, so that every file it writes loads */
#define RUN_NOTES_MAX ((uint64_t)1 << 28)
#define REC_IGNORABLE 1u  /* record flag: the value is the option's default */
#define REC_MAX 4096u     /* option records a reader accepts */

static int same_bits(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

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

/* The options whose default -1 ("auto") every run resolves: metropolis,
 * experimental kron_every, radius_lookahead and radius_check.  A result holds the
 * resolved value, and 0 is the behaviour of a library without them. */
static int auto_option(sive_option id)
{
    return id == SIVE_OPT_METROPOLIS || id == SIVE_OPT_KRON_EVERY ||
           id == SIVE_OPT_RADIUS_LOOKAHEAD || id == SIVE_OPT_RADIUS_CHECK;
}

static void autos_as_without(sivei_options *o)
{
    o->metropolis = o->kron_every = o->radius_lookahead = o->radius_check = 0;
}

/* A version-4 option record: key (id | type << 32 | flags << 40), value. */
typedef struct rec {
    uint64_t id, type, flags, bits;
} rec;

/* The value of an int option that a library without it behaves as: its
 * default, but metropolis' default -1 ("auto") is resolved by every run
 * (a result holds 0 or 1), and 0 is the sampler of a library without
 * it. */
static int64_t int_without(const sive_option_info *in)
{
    return auto_option(in->id) ? 0 : in->int_default;
}

/* Option in's value in o as a record, flagged ignorable at its default. */
static rec record_of(const sive_option_info *in, const sivei_options *o)
{
    int64_t iv = 0;
    double dv = 0.0;
    sivei_options_get(o, in->id, in->type, &iv, &dv, NULL);
    rec r = {.id = (uint32_t)in->id, .type = (uint64_t)in->type, .bits = (uint64_t)iv};
    int dflt = iv == int_without(in);
    if (in->type == SIVE_TYPE_DOUBLE) {
        memcpy(&r.bits, &dv, sizeof r.bits);
        dflt = same_bits(dv, in->double_default);
    }
    r.flags = dflt ? REC_IGNORABLE : 0u;
    return r;
}

/* Every option of the table as an (id, value) record (version 4). */
static void put_options(wbuf *b, const sivei_options *o)
{
    size_t n = 0;
    while (sive_option_at(n))
        n++;
    put_u64(b, n);
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        const rec r = record_of(in, o);
        put_u64(b, r.id | r.type << 32 | r.flags << 40);
        put_u64(b, r.bits);
    }
}

static void put_sections(wbuf *b, const sive_result *r);

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
    put_text(b, r->notes ? r->notes : "", r->notes ? strlen(r->notes) : 0);
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        put_u64(b, (uint64_t)(int64_t)ch->status);
        put_u64(b, (uint64_t)ch->stop_step);
        put_u64(b, (uint64_t)ch->steps_run);
        for (int k = 0; k < SIVEI_N_TRACES; k++)
            for (int64_t m = 0; m < ch->steps_run; m++)
                put_f64(b, ch->trace[k][m]);
    }
    put_sections(b, r);
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
    const size_t run_notes = r->notes ? strlen(r->notes) : 0;
    if (run_notes > RUN_NOTES_MAX)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: run notes of %zu bytes are above 256 MiB (a merge of that many "
                         "parts cannot be saved)", shown, run_notes);
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
    int bad; /* ran past the end, or a field out of range */
    char why[192]; /* what was wrong, when more can be said than "damaged" */
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

/* ---- optional sections: the moved parameters of a weight-restricted
 * probe, the evaluation views (each written only when present, so the
 * file of a plain probe is unchanged) ---- */

#define PARAMS_TAG "PARAMS\0"  /* with its NUL: 8 bytes */
#define VIEWS_TAG "VIEWS\0\0"  /* with its NULs: 8 bytes */
#define VIEWCV_TAG "VIEWCV\0" /* with its NULs: 8 bytes */

static void put_sections(wbuf *b, const sive_result *r)
{
    if (r->n_ranges) {
        put(b, PARAMS_TAG, 8);
        put_u64(b, r->n_ranges);
        for (size_t i = 0; i < 2 * r->n_ranges; i++)
            put_u64(b, r->ranges[i]);
    }
    if (!r->n_views)
        return;
    put(b, VIEWS_TAG, 8);
    put_u64(b, r->n_views);
    for (size_t k = 0; k < r->n_views; k++) {
        const sive_result *v = r->views[k];
        put_text(b, v->name, strlen(v->name));
        put_u64(b, v->n_examples);
        for (int32_t c = r->begin; c < r->end; c++)
            for (int j = 0; j < 2; j++)
                for (int64_t m = 0; m < sivei_chain(r, c)->steps_run; m++)
                    put_f64(b, sivei_chain(v, c)->trace[j ? SIVE_TRACE_S2 : SIVE_TRACE_LBAR][m]);
    }
    int cv = 0;
    for (size_t k = 0; k < r->n_views; k++)
        cv |= r->views[k]->opt.control_variate != 0;
    if (!cv)
        return;
    put(b, VIEWCV_TAG, 8);
    for (size_t k = 0; k < r->n_views; k++)
        put_u64(b, r->views[k]->opt.control_variate != 0);
}

/* PARAMS: ranges ascending, non-empty, within dim. */
static int get_params(rbuf *b, sive_result *r)
{
    uint64_t n = get_u64(b);
    if (n == 0 || n > (b->len - b->at) / 16)
        return SIVE_E_FORMAT;
    uint64_t *v = malloc((size_t)n * 16);
    if (!v)
        return SIVE_E_NOMEM;
    uint64_t k = 0, prev = 0;
    int ok = 1;
    for (uint64_t i = 0; i < n; i++) {
        v[2 * i] = get_u64(b);
        v[2 * i + 1] = get_u64(b);
        ok &= v[2 * i] < v[2 * i + 1] && v[2 * i] >= prev && v[2 * i + 1] <= r->dim;
        prev = v[2 * i + 1];
        k += v[2 * i + 1] - v[2 * i];
    }
    int rc = ok ? sivei_result_set_params(r, v, (size_t)n, k) : SIVE_E_FORMAT;
    free(v);
    return rc;
}

/* VIEWS: each view's name, size and its LBAR and S2 over the chains'
 * steps_run; the rest of a view is the run's (sivei_views_finish()). */
static int get_views(rbuf *b, sive_result *r)
{
    uint64_t n = get_u64(b);
    if (n == 0 || n > 64 || !(r->views = calloc((size_t)n, sizeof *r->views)))
        return n == 0 || n > 64 ? SIVE_E_FORMAT : SIVE_E_NOMEM;
    r->n_views = (size_t)n;
    for (size_t k = 0; k < r->n_views; k++) {
        size_t len = 0;
        const char *name = get_text(b, SIVEI_VIEW_NAME - 1, &len);
        uint64_t nex = get_u64(b);
        /* a name is text: a NUL inside would save as a shorter name */
        const int bad = b->bad || len == 0 || memchr(name, 0, len);
        sive_result *v = bad ? NULL
                             : sivei_result_alloc(&r->opt, r->h, r->eta, r->begin, r->end, 0);
        if (!(r->views[k] = v))
            return bad ? SIVE_E_FORMAT : SIVE_E_NOMEM;
        memcpy(v->name, name, len);
        v->n_examples = nex;
        v->opt.control_variate = 0; /* unless VIEWCV says otherwise */
        for (int32_t c = r->begin; c < r->end; c++) {
            const int64_t steps = sivei_chain(r, c)->steps_run;
            if ((uint64_t)steps * 16u > b->len - b->at)
                return SIVE_E_FORMAT;
            if (sivei_chain_traces(sivei_chain(v, c), steps))
                return SIVE_E_NOMEM;
            for (int j = 0; j < 2; j++)
                for (int64_t m = 0; m < steps; m++)
                    sivei_chain(v, c)->trace[j ? SIVE_TRACE_S2 : SIVE_TRACE_LBAR][m] =
                        get_f64(b);
        }
    }
    return SIVE_OK;
}

/* VIEWCV: which views used control variates (only in a run that had
 * them, and not none). */
static int get_viewcv(rbuf *b, sive_result *r)
{
    int any = 0;
    for (size_t k = 0; k < r->n_views; k++) {
        uint64_t on = get_u64(b);
        if (b->bad || on > 1 || (on && !r->opt.control_variate))
            return SIVE_E_FORMAT;
        r->views[k]->opt.control_variate = (int64_t)on;
        any |= (int)on;
    }
    return any ? SIVE_OK : SIVE_E_FORMAT;
}

/* The sections after the chains, in their order, each at most once. */
static int get_sections(rbuf *b, sive_result *r)
{
    static const char *const tag[] = {PARAMS_TAG, VIEWS_TAG, VIEWCV_TAG};
    int rc = sivei_result_set_params(r, NULL, 0, r->dim), seen = 0;
    while (!rc && b->at < b->len) {
        if (b->len - b->at < 16)
            return SIVE_E_FORMAT;
        int which = 0;
        while (which < 3 && memcmp(b->p + b->at, tag[which], 8))
            which++;
        /* in order, once each; VIEWCV right after VIEWS */
        if (which == 3 || which + 1 <= seen || (which == 2 && seen != 2))
            return SIVE_E_FORMAT;
        b->at += 8;
        seen = which + 1;
        rc = which == 0 ? get_params(b, r) : which == 1 ? get_views(b, r) : get_viewcv(b, r);
    }
    return rc;
}

/* Version 1-3 options, by position; the options those versions did not
 * have take their defaults (the behaviour without them: leapfrog 1,
 * anneal 1, auto_step 0, delayed_rejection 0, replicas 1, orbit_every 0,
 * precondition_rank 0). */
static void get_options_fixed(rbuf *b, sivei_options *o)
{
    sivei_options_default(o);
    autos_as_without(o); /* those versions ran ULA (the defaults -1 are resolved) */
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

/* The next record, its shape checked: ids ascend from 1 (so none repeats
 * and a file has one encoding) and fit an int, the type is int or double,
 * no flag but REC_IGNORABLE.  prev is the previous record's id. */
static int read_rec(rbuf *b, uint64_t *prev, rec *r)
{
    const uint64_t key = get_u64(b);
    r->bits = get_u64(b);
    r->id = key & 0xffffffffu;
    r->type = (key >> 32) & 0xffu;
    r->flags = key >> 40;
    if (b->bad || r->id <= *prev || r->id > INT32_MAX ||
        (r->type != SIVE_TYPE_INT && r->type != SIVE_TYPE_DOUBLE) ||
        (r->flags & ~(uint64_t)REC_IGNORABLE))
        return b->bad = 1, -1;
    *prev = r->id;
    return 0;
}

/* One version-4 record into o.  An unknown id is dropped when flagged
 * ignorable and refused otherwise. */
static void get_record(rbuf *b, sivei_options *o, uint64_t *prev)
{
    rec r;
    if (read_rec(b, prev, &r))
        return;
    const sive_option_info *in = sive_option_info_get((sive_option)r.id);
    if (!in) {
        if (!(r.flags & REC_IGNORABLE)) {
            b->bad = 1;
            snprintf(b->why, sizeof b->why,
                     "option id %llu is set to a value other than its default, and this "
                     "libsive (%s) does not know that option: read the file with the "
                     "version that wrote it", (unsigned long long)r.id,
                     sive_version_string());
        }
        return;
    }
    double dv;
    memcpy(&dv, &r.bits, sizeof dv);
    if (in->type != (sive_option_type)r.type)
        b->bad = 1;
    else
        sivei_options_put(o, in->id, (int64_t)r.bits, dv);
}

/* The number of version-4 records, checked against the bytes left. */
static uint64_t get_rec_count(rbuf *b)
{
    const uint64_t n = get_u64(b);
    if (b->bad || n > REC_MAX || n * 16u > b->len - b->at)
        return b->bad = 1, 0;
    return n;
}

/* Version 4: n records after the defaults (a known option without a
 * record was written before it existed); the radius mode is the one of h
 * and c_h that is not NaN. */
static void get_options_records(rbuf *b, sivei_options *o)
{
    sivei_options_default(o);
    autos_as_without(o); /* no record: written before the option (ULA, off) */
    const uint64_t n = get_rec_count(b);
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n && !b->bad; i++)
        get_record(b, o, &prev);
    o->h_absolute = !isnan(o->h);
    if (isnan(o->h) == isnan(o->c_h))
        b->bad = 1;
    if (o->metropolis < 0 || o->kron_every < 0 || o->radius_lookahead < 0 ||
        o->radius_check < 0)
        b->bad = 1; /* a run's result holds the resolved values */
}

static void get_options(rbuf *b, sivei_options *o)
{
    if (b->version >= VERSION_RECORDS)
        get_options_records(b, o);
    else
        get_options_fixed(b, o);
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

/* Run notes: text lines, each ending in a newline (none: empty), no NUL
 * (it would cut the health text short). */
static int notes_valid(const char *s, size_t n)
{
    return n == 0 || (s[n - 1] == '\n' && !memchr(s, 0, n));
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
    size_t rlen = 0;
    const char *rtxt = b->version >= VERSION_NOTES ? get_text(b, RUN_NOTES_MAX, &rlen) : "";
    *rc = SIVE_E_FORMAT;
    if (b->bad || !options_valid(&o) || !head_valid(&hd, &o) || !notes_valid(rtxt, rlen))
        return NULL;
    /* every chain record takes at least 3 words: a range the payload
     * cannot hold is refused before anything is allocated for it */
    if ((uint64_t)(hd.end - hd.begin) * 24u > b->len - b->at)
        return NULL;
    sive_result *r = sivei_result_alloc(&o, hd.h, hd.eta, (int32_t)hd.begin,
                                        (int32_t)hd.end, 0);
    char *n = note ? malloc(nlen + 1) : NULL;
    if (r && rlen && (r->notes = malloc(rlen + 1))) {
        memcpy(r->notes, rtxt, rlen);
        r->notes[rlen] = '\0';
    }
    if (!r || (note && !n) || (rlen && !r->notes)) {
        *rc = SIVE_E_NOMEM;
        sive_result_free(r);
        free(n);
        return NULL;
    }
    int crc = SIVE_OK;
    r->dim = hd.dim;
    for (int32_t c = r->begin; c < r->end && !crc; c++)
        crc = get_chain(b, r, c);
    if (!crc)
        crc = get_sections(b, r);
    if (crc || b->at != b->len || !chains_agree(r, (int)hd.status)) {
        *rc = crc == SIVE_E_NOMEM ? SIVE_E_NOMEM : SIVE_E_FORMAT;
        sive_result_free(r);
        free(n);
        return NULL;
    }
    r->dtype = (int32_t)hd.dtype;
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
        if (rc == SIVE_E_FORMAT && b.why[0])
            sivei_fail(NULL, rc, "%s: %s", shown, b.why);
        else if (rc == SIVE_E_FORMAT)
            sivei_fail(NULL, rc, "%s: a field is out of range: the file is damaged", shown);
        else if (rc)
            sivei_fail(NULL, rc, "%s: out of memory", shown);
    }
    /* the health text as the run gave it: the flags' text, then the
     * run's notes (kept apart: summarising sets the health text anew) */
    char *notes = r ? r->notes : NULL;
    if (r)
        r->notes = NULL;
    if (!rc && ((rc = sivei_result_summarise(r)) || (rc = sivei_views_finish(r)) ||
                (rc = sivei_result_add_notes(r, notes))))
        sivei_fail(NULL, rc, "%s: out of memory while summarising", shown);
    free(notes);
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

/* ---- the records of a file, unloaded (sive/experimental.h) ---- */

static void to_public(const rec *r, sive_option_record *out)
{
    memset(out, 0, sizeof *out);
    out->id = (int32_t)r->id;
    out->type = (sive_option_type)r->type;
    out->ignorable = (r->flags & REC_IGNORABLE) != 0;
    out->known = sive_option_info_get((sive_option)r->id) != NULL;
    if (r->type == SIVE_TYPE_INT)
        out->int_value = (int64_t)r->bits;
    else
        memcpy(&out->double_value, &r->bits, sizeof out->double_value);
}

/* Formats 1-3: one record per option of the table, from the fixed
 * fields. */
static uint64_t list_fixed(rbuf *b, sive_option_record *out, size_t cap)
{
    sivei_options o;
    memset(&o, 0, sizeof o);
    get_options_fixed(b, &o);
    const sive_option_info *in;
    size_t i = 0;
    for (; (in = sive_option_at(i)); i++) {
        const rec r = record_of(in, &o);
        if (i < cap)
            to_public(&r, &out[i]);
    }
    return i;
}

int sive_result_bytes_options(const void *bytes, size_t len, sive_option_record *out,
                              size_t cap, size_t *n)
{
    if (n)
        *n = 0;
    if (!n || (!bytes && len) || (!out && cap))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_bytes_options: NULL argument");
    const char *shown = "result bytes";
    const unsigned char *p = bytes;
    int rc = check_head(p, len, len, shown);
    if (!rc)
        rc = check_hash(p, len, shown);
    if (rc)
        return rc;
    rbuf b = {.p = p, .len = len - 8, .at = HEAD, .version = p[8]};
    uint64_t count = 0, prev = 0;
    if (b.version < VERSION_RECORDS) {
        count = list_fixed(&b, out, cap);
    } else {
        count = get_rec_count(&b);
        rec r;
        for (uint64_t i = 0; i < count && !read_rec(&b, &prev, &r); i++)
            if (i < cap)
                to_public(&r, &out[i]);
    }
    if (b.bad)
        return sivei_fail(NULL, SIVE_E_FORMAT, "%s: the option records are damaged", shown);
    *n = (size_t)count;
    sivei_clear_error();
    return SIVE_OK;
}
