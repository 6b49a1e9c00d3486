/* Results of disjoint chain ranges merged into the whole run's result.
 *
 * A chain's values depend only on the options and on (seed, chain), so
 * copying each part's chains into one result and summarising them with
 * the code a whole run uses gives the whole run's numbers bit for bit.
 * What has to be checked is that the parts really are pieces of one run. */
#include "probe_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0; /* NaN == NaN, -0 != +0 */
}

/* The name of the first option (threads and the chain range excepted,
 * they do not change any chain) on which a and b differ, or NULL.  Read
 * through the option table, so an option added later is compared too. */
const char *sivei_option_mismatch(const sivei_options *a, const sivei_options *b)
{
    if (a->h_absolute != b->h_absolute)
        return "radius mode";
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        if (in->id == SIVE_OPT_THREADS || in->id == SIVE_OPT_CHAIN_BEGIN ||
            in->id == SIVE_OPT_CHAIN_END)
            continue;
        int64_t ia = 0, ib = 0;
        double da = 0.0, db = 0.0;
        sivei_options_get(a, in->id, in->type, &ia, &da, NULL);
        sivei_options_get(b, in->id, in->type, &ib, &db, NULL);
        if (ia != ib || !same_double(da, db))
            return in->name;
    }
    return NULL;
}

/* Part i fits part 0: same configuration, model and theta*, and a status
 * the other parts can complete. */
static int check_part(const sive_result *ref, const sive_result *p, size_t i)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_merge: part %zu is NULL", i);
    if (p->status != SIVE_OK && p->status != SIVE_E_DIVERGED)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu (chains %d..%d) did not complete (%s: %s); rerun it",
                         i, (int)p->begin, (int)p->end - 1, sive_strerror(p->status),
                         p->errmsg);
    for (int32_t c = p->begin; c < p->end; c++) {
        sive_chain_status st = sivei_chain(p, c)->status;
        if (st == SIVE_CHAIN_CALLBACK || st == SIVE_CHAIN_ABORTED)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "part %zu: chain %d was stopped (%s) although the part says "
                             "it completed; rerun it", i, (int)c,
                             sive_chain_status_string(st));
    }
    const char *what = sivei_option_mismatch(&ref->opt, &p->opt);
    if (what)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu differs from part 0 in option '%s': not parts of one probe",
                         i, what);
    if (ref->dtype != p->dtype)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu probed a model of another dtype (%s; part 0: %s)", i,
                         p->dtype == SIVE_F32 ? "f32" : "f64",
                         ref->dtype == SIVE_F32 ? "f32" : "f64");
    if (ref->dim != p->dim || ref->n_examples != p->n_examples)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu probed a different model (dim %llu, n %llu; part 0: "
                         "dim %llu, n %llu)", i, (unsigned long long)p->dim,
                         (unsigned long long)p->n_examples, (unsigned long long)ref->dim,
                         (unsigned long long)ref->n_examples);
    if (ref->identity != p->identity)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu probed another model or data set (identity %016llx, part "
                         "0: %016llx; 0 = none recorded)", i,
                         (unsigned long long)p->identity, (unsigned long long)ref->identity);
    if (ref->theta_hash != p->theta_hash)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu was probed at a different theta* (hash %016llx, part 0: "
                         "%016llx)", i, (unsigned long long)p->theta_hash,
                         (unsigned long long)ref->theta_hash);
    if (!same_double(ref->h, p->h) || !same_double(ref->eta, p->eta))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu used radius h = %.17g, part 0 h = %.17g", i, p->h, ref->h);
    if (ref->n_ranges != p->n_ranges || ref->moved != p->moved ||
        (p->n_ranges &&
         memcmp(ref->ranges, p->ranges, 2 * p->n_ranges * sizeof *p->ranges) != 0))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu moved other parameters (%zu ranges, %llu parameters; "
                         "part 0: %zu ranges, %llu parameters)", i, p->n_ranges,
                         (unsigned long long)p->moved, ref->n_ranges,
                         (unsigned long long)ref->moved);
    return SIVE_OK;
}

/* Every chain in exactly one part; owner[c] = its part. */
static int check_cover(const sive_result *const *parts, size_t n, int32_t K, size_t *owner)
{
    for (int32_t c = 0; c < K; c++)
        owner[c] = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        for (int32_t c = parts[i]->begin; c < parts[i]->end; c++) {
            if (owner[c] != SIZE_MAX)
                return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                                 "chain %d is in part %zu and in part %zu: the ranges "
                                 "overlap", (int)c, owner[c], i);
            owner[c] = i;
        }
    for (int32_t c = 0; c < K; c++)
        if (owner[c] == SIZE_MAX)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "chain %d of %d is in no part: a part is missing", (int)c, (int)K);
    return SIVE_OK;
}

static int copy_chain(sivei_chain_out *dst, const sivei_chain_out *src)
{
    dst->status = src->status;
    dst->stop_step = src->stop_step;
    dst->steps_run = src->steps_run;
    if (sivei_chain_traces(dst, src->steps_run))
        return SIVE_E_NOMEM;
    for (int k = 0; k < SIVEI_N_TRACES; k++)
        if (src->steps_run > 0)
            memcpy(dst->trace[k], src->trace[k], (size_t)src->steps_run * sizeof(double));
    return SIVE_OK;
}

/* ---- run notes (docs/scale.md, "Run notes") ----
 *
 * A part's notes are lines; a line's key is its text before the first
 * ": " ("metropolis", "radius", "replicas 3", ...; the whole line when it
 * has none), and its slot the key with its rank among the part's lines of
 * that key.  The merged notes: a part's notes when every part has the
 * same; otherwise slot by slot, in the order the parts (by their first
 * chain) first have them, the line itself when every part has it
 * verbatim, else each part's line, by first chain, as "key (chains
 * a..b): rest".  So the lines that do not depend on a part's chains (the
 * defaults', the radius search's) read as the whole run's, and those that
 * summarise a part's chains (the samplers' acceptances) are listed per
 * part rather than averaged into numbers no run printed.  A line whose key
 * already ends in such a tag (notes that came from a merge) keeps it alone:
 * it names the chains the line summarises, and a second tag would only
 * repeat them. */

typedef struct note_line {
    const char *s;  /* the line, without its newline */
    size_t len, key; /* its length and its key's */
    int rank;       /* among the part's lines of the same key */
    size_t part;    /* into the parts, sorted by first chain */
    int used;
} note_line;

static size_t line_key(const char *s, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] == ':' && s[i + 1] == ' ')
            return i;
    return len;
}

/* 1 when the key s[0, key) ends in a tag " (chains a..b)". */
static int has_tag(const char *s, size_t key)
{
    static const char open[] = " (chains ";
    size_t i = key;
    if (i < 1 || s[--i] != ')')
        return 0;
    size_t d = 0; /* digits, '.', '.', digits, backwards */
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
        i--, d++;
    if (!d || i < 2 || s[i - 1] != '.' || s[i - 2] != '.')
        return 0;
    i -= 2;
    for (d = 0; i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9'; d++)
        i--;
    return d && i >= sizeof open - 1 && !memcmp(s + i - (sizeof open - 1), open, sizeof open - 1);
}

static int same_slot(const note_line *a, const note_line *b)
{
    return a->key == b->key && a->rank == b->rank && !memcmp(a->s, b->s, a->key);
}

static int by_first_chain(const void *x, const void *y)
{
    const sive_result *a = *(const sive_result *const *)x, *b = *(const sive_result *const *)y;
    return (a->begin > b->begin) - (a->begin < b->begin);
}

/* The lines of the sorted parts' notes into l (count returned). */
static size_t note_lines(const sive_result *const *sp, size_t n, note_line *l)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t first = k;
        for (const char *s = sp[i]->notes; s && *s;) {
            const char *e = strchr(s, '\n');
            const size_t len = e ? (size_t)(e - s) : strlen(s);
            l[k] = (note_line){.s = s, .len = len, .key = line_key(s, len), .part = i};
            for (size_t j = first; j < k; j++)
                l[k].rank += l[j].key == l[k].key && !memcmp(l[j].s, l[k].s, l[k].key);
            k++;
            s += len + (e != NULL);
        }
    }
    return k;
}

char *sivei_notes_merge(const sive_result *const *parts, size_t n)
{
    int same = 1;
    for (size_t i = 1; i < n && same; i++)
        same = !strcmp(parts[i]->notes ? parts[i]->notes : "",
                       parts[0]->notes ? parts[0]->notes : "");
    if (same)
        return strdup(parts[0]->notes ? parts[0]->notes : "");
    const sive_result **sp = malloc(n * sizeof *sp);
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        for (const char *s = parts[i]->notes; s && *s; s++)
            lines += *s == '\n' || !s[1];
    note_line *l = malloc((lines ? lines : 1) * sizeof *l);
    char *out = calloc(1, 1);
    int oom = !sp || !l || !out;
    if (oom) {
        free(sp);
        free(l);
        free(out);
        return NULL;
    }
    memcpy(sp, parts, n * sizeof *sp);
    qsort(sp, n, sizeof *sp, by_first_chain);
    const size_t k = note_lines(sp, n, l);
    for (size_t i = 0; i < k; i++) {
        if (l[i].used)
            continue;
        /* the slot's line in each part (at most one each), from line i on */
        size_t have = 0, verbatim = 0;
        for (size_t j = i; j < k; j++)
            if (!l[j].used && same_slot(&l[i], &l[j])) {
                have++;
                verbatim += l[j].len == l[i].len && !memcmp(l[j].s, l[i].s, l[i].len);
            }
        const int common = have == n && verbatim == n;
        for (size_t j = i; j < k; j++) {
            if (l[j].used || !same_slot(&l[i], &l[j]))
                continue;
            l[j].used = 1;
            if (common && j != i)
                continue;
            if (common || has_tag(l[j].s, l[j].key)) {
                oom |= sivei_text_append(&out, l[j].s, l[j].len);
            } else {
                char tag[64];
                const sive_result *p = sp[l[j].part];
                const size_t rest = l[j].key < l[j].len ? l[j].key + 2 : l[j].len;
                int t = snprintf(tag, sizeof tag, " (chains %d..%d)%s", (int)p->begin,
                                 (int)p->end - 1, rest < l[j].len ? ": " : "");
                oom |= sivei_text_append(&out, l[j].s, l[j].key) ||
                       sivei_text_append(&out, tag, (size_t)t) ||
                       sivei_text_append(&out, l[j].s + rest, l[j].len - rest);
            }
            oom |= sivei_text_append(&out, "\n", 1);
        }
    }
    free(sp);
    free(l);
    if (oom) {
        free(out);
        return NULL;
    }
    return out;
}

/* The parts' evaluation views, view by view, into r (the parts' views
 * are whole results on the same chains: merged as parts themselves). */
static int merge_views(sive_result *r, const sive_result *const *parts, size_t n)
{
    const sive_result *ref = parts[0];
    for (size_t i = 1; i < n; i++) {
        int same = parts[i]->n_views == ref->n_views;
        for (size_t k = 0; same && k < ref->n_views; k++)
            same = !strcmp(parts[i]->views[k]->name, ref->views[k]->name);
        if (!same)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "part %zu has other evaluation views than part 0", i);
    }
    if (!ref->n_views)
        return SIVE_OK;
    const sive_result **vp = malloc(n * sizeof *vp);
    if (!vp || !(r->views = calloc(ref->n_views, sizeof *r->views))) {
        free(vp);
        return sivei_fail(NULL, SIVE_E_NOMEM, "sive_result_merge: out of memory");
    }
    r->n_views = ref->n_views;
    int rc = SIVE_OK;
    for (size_t k = 0; k < ref->n_views && !rc; k++) {
        for (size_t i = 0; i < n; i++)
            vp[i] = parts[i]->views[k];
        if (!(rc = sive_result_merge(&r->views[k], vp, n)))
            strcpy(r->views[k]->name, ref->views[k]->name);
    }
    free(vp);
    return rc;
}

int sive_result_merge(sive_result **out, const sive_result *const *parts, size_t n)
{
    if (out)
        *out = NULL;
    if (!out || !parts || n == 0 || !parts[0])
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_result_merge: NULL argument or no parts");
    const sive_result *ref = parts[0];
    int rc = SIVE_OK;
    for (size_t i = 0; i < n && !rc; i++)
        rc = check_part(ref, parts[i], i);
    if (rc)
        return rc;
    size_t *owner = malloc((size_t)ref->chains * sizeof *owner);
    if (!owner)
        return sivei_fail(NULL, SIVE_E_NOMEM, "sive_result_merge: out of memory");
    rc = check_cover(parts, n, ref->chains, owner);
    sivei_options o = ref->opt;
    o.chain_begin = o.chain_end = 0; /* the whole run's (default) range */
    sive_result *r = rc ? NULL : sivei_result_alloc(&o, ref->h, ref->eta, 0, ref->chains, 0);
    int oom = !rc && !r;
    for (int32_t c = 0; !rc && !oom && c < ref->chains; c++)
        oom = copy_chain(sivei_chain(r, c), sivei_chain(parts[owner[c]], c)) != SIVE_OK;
    if (oom)
        rc = sivei_fail(NULL, SIVE_E_NOMEM, "sive_result_merge: out of memory for the traces");
    free(owner);
    if (rc) {
        sive_result_free(r);
        return rc;
    }
    r->dtype = ref->dtype;
    r->dim = ref->dim;
    r->n_examples = ref->n_examples;
    r->theta_hash = ref->theta_hash;
    r->identity = ref->identity;
    if (sivei_result_set_params(r, ref->ranges, ref->n_ranges, ref->moved)) {
        sive_result_free(r);
        return sivei_fail(NULL, SIVE_E_NOMEM, "sive_result_merge: out of memory");
    }
    if ((rc = sivei_result_summarise(r))) {
        sive_result_free(r);
        return sivei_fail(NULL, rc, "sive_result_merge: out of memory while summarising");
    }
    sivei_result_conclude(r, SIVE_OK, 0, "");
    char *notes = sivei_notes_merge(parts, n);
    rc = notes ? sivei_result_add_notes(r, notes) : SIVE_E_NOMEM;
    free(notes);
    if (rc) {
        sive_result_free(r);
        return sivei_fail(NULL, rc, "sive_result_merge: out of memory for the run notes");
    }
    if ((rc = merge_views(r, parts, n))) {
        sive_result_free(r);
        return rc;
    }
    *out = r;
    sivei_clear_error();
    return SIVE_OK;
}
