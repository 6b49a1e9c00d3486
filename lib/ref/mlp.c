/* Reference MLP: forward, backward and grouped evaluation on BLIS sgemm.
 *
 * Every pass streams the examples through the network in blocks of
 * w->rows rows: gather the block's bytes into floats, three GEMMs with a
 * fused bias(+ReLU) pass after each, then the per-row cross-entropy (and,
 * for the gradient, the backward GEMMs for the same block accumulating into
 * the weight gradients).  So the workspace never depends on the batch size
 * and the block's activations stay in cache between layers. */
#include "internal.h"
#include "mlp_impl.h"
#include "mlp_skx.h"
#include "thread_adapt.h"

#include <blis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
/* AVX2 versions of the byte conversion, chosen at run time. */
#define SIVE_MLP_AVX2 1
#include <immintrin.h>
#else
#define SIVE_MLP_AVX2 0
#endif

/* Stream purposes private to the MLP ("MLPI", "MLPS"): far from the small
 * numbers the probe uses, so sharing a seed with a probe is harmless. */
#define PURPOSE_INIT 0x4d4c5049u
#define PURPOSE_SHUFFLE 0x4d4c5053u

#define MAX_BLOCK_ROWS ((size_t)1 << 20)
#define MAX_BLIS_THREADS 1024

struct sive_mlp {
    size_t in, h1, h2, out;
    size_t dim;
    /* offsets of W1, b1, W2, b2, W3, b3 in theta */
    size_t w1, b1, w2, b2, w3, b3;
};

struct sive_mlp_work {
    size_t in, h1, h2, out; /* shape it was made for */
    size_t rows;            /* rows per block */
    size_t fwd_rows;        /* rows per block of the forward-only passes */
    rntm_t rntm;            /* BLIS thread count of this workspace */
    void *mem;              /* one allocation carved into the buffers */
    /* x, a1, a2, z3 and y hold fwd_rows rows, d1 and d2 rows rows */
    float *x;               /* rows x in: pixel bytes as floats 0..255 */
    float *a1, *a2;         /* rows x h1, rows x h2: post-ReLU activations */
    float *z3;              /* rows x out: logits, then dLoss/dlogits */
    float *d1, *d2;         /* rows x h1, rows x h2: backward deltas */
    double *gb;             /* h1+h2+out: bias gradient accumulators */
    float *wt;              /* W1, W2, W3 transposed (skx only, else NULL) */
    sivei_skx *l1;          /* layer 1 without BLIS's packing (skx, else NULL) */
    const uint8_t **rowp;   /* fwd_rows: the block's examples, for l1 */
    sivei_adapt *adapt;     /* choose the gradient's BLIS threads per block */
    uint8_t *y;             /* rows: labels of the block */
};

/* ------------------------------------------------------------------ */
/* Architecture                                                       */
/* ------------------------------------------------------------------ */

int sive_mlp_new(sive_mlp **out, size_t in, size_t h1, size_t h2,
                 size_t classes)
{
    if (!out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_mlp_new: out is NULL");
    *out = NULL;
    if (in == 0 || h1 == 0 || h2 == 0 || classes == 0 ||
        in > SIVE_MLP_MAX_WIDTH || h1 > SIVE_MLP_MAX_WIDTH ||
        h2 > SIVE_MLP_MAX_WIDTH || classes > SIVE_MLP_MAX_WIDTH)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_new: layer sizes %zu-%zu-%zu-%zu: each must "
                         "be in [1, %zu]", in, h1, h2, classes,
                         (size_t)SIVE_MLP_MAX_WIDTH);
    if (classes < 2)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_new: cross-entropy needs at least 2 classes");
    /* widths <= 2^24, so each product fits easily in 64 bits */
    uint64_t dim = (uint64_t)h1 * (in + 1) + (uint64_t)h2 * (h1 + 1) +
                   (uint64_t)classes * (h2 + 1);
    if (dim > SIVE_MLP_MAX_PARAMS || dim > SIZE_MAX / sizeof(float))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_new: %zu-%zu-%zu-%zu has %llu parameters, "
                         "more than the %llu supported", in, h1, h2, classes,
                         (unsigned long long)dim,
                         (unsigned long long)SIVE_MLP_MAX_PARAMS);
    sive_mlp *m = calloc(1, sizeof *m);
    if (!m)
        return sivei_fail(NULL, SIVE_E_NOMEM, "sive_mlp_new: out of memory");
    m->in = in;
    m->h1 = h1;
    m->h2 = h2;
    m->out = classes;
    m->dim = (size_t)dim;
    m->w1 = 0;
    m->b1 = m->w1 + h1 * in;
    m->w2 = m->b1 + h1;
    m->b2 = m->w2 + h2 * h1;
    m->w3 = m->b2 + h2;
    m->b3 = m->w3 + classes * h2;
    *out = m;
    return SIVE_OK;
}

void sive_mlp_free(sive_mlp *m) { free(m); }

size_t sive_mlp_dim(const sive_mlp *m) { return m ? m->dim : 0; }

int sive_mlp_sizes(const sive_mlp *m, size_t *in, size_t *h1, size_t *h2,
                   size_t *classes)
{
    if (!m)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_mlp_sizes: m is NULL");
    if (in) *in = m->in;
    if (h1) *h1 = m->h1;
    if (h2) *h2 = m->h2;
    if (classes) *classes = m->out;
    return SIVE_OK;
}

int sive_mlp_param_range(const sive_mlp *m, const char *name, uint64_t *begin,
                         uint64_t *end)
{
    if (!m || !name || !begin || !end)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_mlp_param_range: NULL argument");
    /* layer k's weights, bias, and the next layer's start (the dim last) */
    const size_t at[4][2] = {{m->w1, m->b1}, {m->w2, m->b2}, {m->w3, m->b3}, {m->dim, 0}};
    for (int k = 0; k < 3; k++) {
        char w[16], b[16], l[16];
        snprintf(w, sizeof w, "%d.weight", k + 1);
        snprintf(b, sizeof b, "%d.bias", k + 1);
        snprintf(l, sizeof l, "layer%d", k + 1);
        const int iw = !strcmp(name, w), ib = !strcmp(name, b), il = !strcmp(name, l);
        if (iw || ib || il) {
            *begin = ib ? at[k][1] : at[k][0];
            *end = iw ? at[k][1] : at[k + 1][0];
            return SIVE_OK;
        }
    }
    return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                     "sive_mlp_param_range: no parameters named '%s' (names: 1.weight, "
                     "1.bias, 2.weight, 2.bias, 3.weight, 3.bias, or layer1, layer2, layer3)",
                     name);
}

static void init_layer(sive_rng *g, float *p, size_t n, size_t fan_in)
{
    const double bound = 1.0 / sqrt((double)fan_in);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((2.0 * sive_rng_uniform(g) - 1.0) * bound);
}

int sive_mlp_init_params(const sive_mlp *m, float *theta, uint64_t seed)
{
    if (!m || !theta)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_init_params: NULL argument");
    sive_rng g;
    sive_rng_stream(&g, seed, 0, PURPOSE_INIT);
    /* W and b of a layer are contiguous and share the bound */
    init_layer(&g, theta + m->w1, m->h1 * m->in + m->h1, m->in);
    init_layer(&g, theta + m->w2, m->h2 * m->h1 + m->h2, m->h1);
    init_layer(&g, theta + m->w3, m->out * m->h2 + m->out, m->h2);
    return SIVE_OK;
}

/* ------------------------------------------------------------------ */
/* Workspaces                                                         */
/* ------------------------------------------------------------------ */

/* Round a float count up to a 64-byte boundary so every buffer is aligned. */
static size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Rows per block of the passes without a backward step (example and group
 * losses, evaluation).  Their results do not depend on it: a row's logits
 * are its own dot products, summed over the inputs in the kernel's order
 * whatever the block (test_mlp checks it bit for bit), unlike the
 * gradient, which sums over the block's rows.  With the skx kernels the
 * weights are packed again for every product, and 512-row blocks cut the
 * dense evaluation to 0.78-0.86 of its time with 256 (larger ones leave
 * the 2 MiB L2); with haswell, 512 and more were slower (1.19-1.34 x;
 * docs/performance.md, section 12).  So twice block_rows on skx only. */
static int on_skx(void)
{
    const char *k = sive_mlp_blis_kernels();
    return strncmp(k, "skx", 3) == 0 && (k[3] == ' ' || k[3] == '\0');
}

static size_t forward_rows(size_t block_rows, int skx)
{
    return skx && block_rows <= MAX_BLOCK_ROWS / 2 ? 2 * block_rows : block_rows;
}

int sive_mlp_work_new(sive_mlp_work **out, const sive_mlp *m,
                      size_t block_rows, int blis_threads)
{
    if (!out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_work_new: out is NULL");
    *out = NULL;
    if (!m)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_work_new: m is NULL");
    if (block_rows == 0)
        block_rows = SIVE_MLP_DEFAULT_BLOCK_ROWS;
    if (block_rows > MAX_BLOCK_ROWS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_work_new: block_rows %zu exceeds %zu",
                         block_rows, MAX_BLOCK_ROWS);
    if (blis_threads < 1 || blis_threads > MAX_BLIS_THREADS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_mlp_work_new: blis_threads %d not in [1, %d]",
                         blis_threads, MAX_BLIS_THREADS);
    sive_mlp_blis_kernels(); /* BLIS's kernel choice, before its first use */
    const int skx = on_skx();
    const size_t r = block_rows, fr = forward_rows(r, skx);
    const uint64_t nwt = skx ? (uint64_t)m->in * m->h1 + (uint64_t)m->h1 * m->h2 +
                                   (uint64_t)m->h2 * m->out + 16
                             : 0;
    /* widths <= 2^24 and r, fr <= 2^20: all products fit in 64 bits */
    const uint64_t r64 = r, f64 = fr;
    uint64_t nf = f64 * (m->in + m->h1 + m->h2 + m->out) + r64 * (m->h1 + m->h2) +
                  6 * 16 + nwt; /* + padding of six buffers */
    uint64_t nd = (uint64_t)m->h1 + m->h2 + m->out + 16;
    uint64_t bytes = nf * sizeof(float) + nd * sizeof(double) + f64;
    if (bytes > SIZE_MAX / 2)
        return sivei_fail(NULL, SIVE_E_NOMEM,
                         "sive_mlp_work_new: workspace of %llu bytes too large",
                         (unsigned long long)bytes);
    sive_mlp_work *w = calloc(1, sizeof *w);
    if (!w)
        return sivei_fail(NULL, SIVE_E_NOMEM, "sive_mlp_work_new: out of memory");
    if (posix_memalign(&w->mem, 64, (size_t)bytes) != 0) {
        free(w);
        return sivei_fail(NULL, SIVE_E_NOMEM,
                         "sive_mlp_work_new: cannot allocate %llu bytes",
                         (unsigned long long)bytes);
    }
    float *f = w->mem;
    w->x = f;  f += pad16(fr * m->in);
    w->a1 = f; f += pad16(fr * m->h1);
    w->d1 = f; f += pad16(r * m->h1);
    w->a2 = f; f += pad16(fr * m->h2);
    w->d2 = f; f += pad16(r * m->h2);
    w->z3 = f; f += pad16(fr * m->out);
    w->wt = nwt ? f : NULL;
    f += nwt ? pad16(nwt) : 0;
    w->gb = (double *)(void *)f;
    w->y = (uint8_t *)(w->gb + pad16(m->h1 + m->h2 + m->out));
    w->in = m->in;
    w->h1 = m->h1;
    w->h2 = m->h2;
    w->out = m->out;
    w->rows = r;
    w->fwd_rows = fr;
    if (skx && (w->rowp = malloc(fr * sizeof *w->rowp)) != NULL &&
        !(w->l1 = sivei_skx_new(m->in, m->h1))) {
        free(w->rowp);
        w->rowp = NULL;
    }
    bli_rntm_init(&w->rntm);
    bli_rntm_set_num_threads((dim_t)blis_threads, &w->rntm);
    *out = w;
    return SIVE_OK;
}

void sivei_mlp_work_set_blis_threads(sive_mlp_work *w, int blis_threads)
{
    bli_rntm_set_num_threads((dim_t)blis_threads, &w->rntm);
}

void sivei_mlp_work_set_adapt(sive_mlp_work *w, sivei_adapt *a)
{
    w->adapt = a;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Before a gradient block: its BLIS thread count, if adapting. */
static int adapt_begin(sive_mlp_work *w, double *t0)
{
    if (!w->adapt)
        return 0;
    int set = sivei_adapt_next(w->adapt);
    sivei_mlp_work_set_blis_threads(w, set ? w->adapt->threads : 1);
    *t0 = now();
    return set;
}

static void adapt_end(sive_mlp_work *w, int set, double t0, size_t rows)
{
    if (w->adapt)
        sivei_adapt_record(w->adapt, set, (now() - t0) / (double)rows);
}

void sivei_mlp_work_plain(sive_mlp_work *w)
{
    w->fwd_rows = w->rows;
    w->wt = NULL;
    sivei_skx_free(w->l1);
    w->l1 = NULL;
}

void sive_mlp_work_free(sive_mlp_work *w)
{
    if (!w)
        return;
    sivei_skx_free(w->l1);
    free(w->rowp);
    free(w->mem);
    free(w);
}

/* ------------------------------------------------------------------ */
/* Kernels                                                            */
/* ------------------------------------------------------------------ */

/* C[m x n] = alpha * A[m x k] B[k x n] + beta * C, C row-major.  Transposed
 * operands are expressed through strides (BLIS takes general strides).
 * BLIS's prototypes are not const-qualified; it never writes A or B. */
static void gemm(sive_mlp_work *w, size_t m, size_t n, size_t k, float alpha,
                 const float *a, size_t rsa, size_t csa, const float *b,
                 size_t rsb, size_t csb, float beta, float *c)
{
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n,
                 (dim_t)k, &alpha, (float *)a, (inc_t)rsa, (inc_t)csa,
                 (float *)b, (inc_t)rsb, (inc_t)csb, &beta, c, (inc_t)n, 1,
                 NULL, &w->rntm);
}

/* The inputs are the raw bytes; 1/255 is applied as the alpha of the
 * products that read them, which keeps the conversion exact and cheap. */
static const float INPUT_SCALE = 1.0f / 255.0f;

static int check_common(const char *fn, const sive_mlp *m,
                        const sive_mlp_work *w, const float *theta,
                        const sive_dataset *ds)
{
    if (!m || !w || !theta || !ds)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    if (w->in != m->in || w->h1 != m->h1 || w->h2 != m->h2 || w->out != m->out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: workspace made for %zu-%zu-%zu-%zu, model is "
                         "%zu-%zu-%zu-%zu", fn, w->in, w->h1, w->h2, w->out,
                         m->in, m->h1, m->h2, m->out);
    size_t rows = sive_dataset_rows(ds), cols = sive_dataset_cols(ds);
    if (rows * cols != m->in)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: data set examples are %zux%zu = %zu values, the "
                         "model takes %zu inputs", fn, rows, cols, rows * cols,
                         m->in);
    return SIVE_OK;
}

/* check_common() and the batch: idx and the output (named out_name) not
 * NULL, n rows (0 when the counts are bad, said as bad_n). */
static int check_batch(const char *fn, const sive_mlp *m, const sive_mlp_work *w,
                       const float *theta, const sive_dataset *ds, const uint64_t *idx,
                       const void *out, const char *out_name, size_t n, const char *bad_n)
{
    int rc = check_common(fn, m, w, theta, ds);
    if (rc)
        return rc;
    if (!idx || !out || n == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: idx/%s NULL or %s", fn, out_name,
                         bad_n);
    return SIVE_OK;
}

/* The element-wise passes are written with GCC/Clang vector extensions (and
 * SSE2 for the byte conversion, which generic vectors lower to scalar code)
 * so that they are vectorised at -O2 as well: GCC's -O2 cost model leaves
 * loops with a run-time trip count scalar, which made these passes cost a
 * third of the GEMM time.  Other compilers get the scalar loops. */
#if defined(__GNUC__)
#define SIVE_MLP_VECTOR 1
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
#else
#define SIVE_MLP_VECTOR 0
#endif

#if SIVE_MLP_AVX2
/* vpmovzxbd + vcvtdq2ps: 8 pixels per instruction pair, instead of the
 * SSE2 unpacking cascade (the gather is bound by memory as much as by this,
 * so the gain is small). */
__attribute__((target("avx2"))) static void
bytes_to_floats_avx2(float *restrict x, const uint8_t *restrict p, size_t n)
{
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256i a = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64((const __m128i *)(const void *)(p + j)));
        __m256i b = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64((const __m128i *)(const void *)(p + j + 8)));
        _mm256_storeu_ps(x + j, _mm256_cvtepi32_ps(a));
        _mm256_storeu_ps(x + j + 8, _mm256_cvtepi32_ps(b));
    }
    for (; j < n; j++)
        x[j] = (float)p[j];
}

static int have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}
#endif

static void bytes_to_floats(float *restrict x, const uint8_t *restrict p,
                            size_t n)
{
    size_t j = 0;
#if defined(__SSE2__)
    const __m128i z = _mm_setzero_si128();
    for (; j + 16 <= n; j += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + j));
        __m128i lo = _mm_unpacklo_epi8(b, z), hi = _mm_unpackhi_epi8(b, z);
        _mm_storeu_ps(x + j, _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, z)));
        _mm_storeu_ps(x + j + 4, _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, z)));
        _mm_storeu_ps(x + j + 8, _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, z)));
        _mm_storeu_ps(x + j + 12, _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, z)));
    }
#endif
    for (; j < n; j++)
        x[j] = (float)p[j];
}

/* Source of a block's examples: idx[first + i] or, without idx, the
 * consecutive examples first + i. */
typedef struct rows_src {
    const uint8_t *pix, *lab;
    size_t count;
    const uint64_t *idx;
} rows_src;

static rows_src make_src(const sive_dataset *ds, const uint64_t *idx)
{
    rows_src s = {sive_dataset_pixels(ds), sive_dataset_labels(ds),
                  sive_dataset_count(ds), idx};
    return s;
}

/* Rows prefetched ahead of the one being converted. */
#define PF_AHEAD 2

/* Gather r examples into w->x (as floats 0..255), or only their addresses
 * into w->rowp when the first layer reads the bytes (fused), and the
 * labels into w->y, validating indices and labels. */
static int gather(const char *fn, const sive_mlp *m, sive_mlp_work *w,
                  const rows_src *s, size_t first, size_t r, int fused)
{
    const size_t in = m->in;
#if SIVE_MLP_AVX2
    void (*cvt)(float *restrict, const uint8_t *restrict, size_t) =
        have_avx2() ? bytes_to_floats_avx2 : bytes_to_floats;
#else
    void (*cvt)(float *restrict, const uint8_t *restrict, size_t) =
        bytes_to_floats;
#endif
    for (size_t i = 0; i < r; i++) {
        uint64_t e = s->idx ? s->idx[first + i] : (uint64_t)(first + i);
#if defined(__GNUC__)
        /* Random rows miss the cache and the hardware prefetcher cannot
         * guess the next one: fetch row i+PF_AHEAD while converting row i
         * (this halved the gather time here). */
        if (s->idx && i + PF_AHEAD < r && !fused) {
            uint64_t f = s->idx[first + i + PF_AHEAD];
            if (f < s->count) {
                const char *q = (const char *)(s->pix + (size_t)f * in);
                for (size_t o = 0; o < in; o += 64)
                    __builtin_prefetch(q + o, 0, 3);
                __builtin_prefetch(q + in - 1, 0, 3);
            }
        }
#endif
        if (e >= s->count)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: index %llu (position %zu) out of range for "
                             "%zu examples", fn, (unsigned long long)e,
                             first + i, s->count);
        uint8_t y = s->lab[e];
        if (y >= m->out)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: example %llu has label %u, model has %zu "
                             "classes", fn, (unsigned long long)e, (unsigned)y,
                             m->out);
        w->y[i] = y;
        if (fused)
            w->rowp[i] = s->pix + (size_t)e * in;
        else
            cvt(w->x + i * in, s->pix + (size_t)e * in, in);
    }
    return SIVE_OK;
}

/* a = relu(a + b) row-wise.  v < 0 ? 0 : v lets NaN through, as
 * torch.relu does, so that non-finite parameters always reach the loss. */
static void bias_relu(float *restrict a, const float *restrict b, size_t r,
                      size_t n)
{
    for (size_t i = 0; i < r; i++, a += n) {
        size_t j = 0;
#if SIVE_MLP_VECTOR
        for (; j + 4 <= n; j += 4) {
            v4f va, vb;
            memcpy(&va, a + j, sizeof va);
            memcpy(&vb, b + j, sizeof vb);
            va += vb;
            v4i neg = va < (v4f){0.0f, 0.0f, 0.0f, 0.0f};
            va = (v4f)((v4i)va & ~neg);
            memcpy(a + j, &va, sizeof va);
        }
#endif
        for (; j < n; j++) {
            float v = a[j] + b[j];
            a[j] = v < 0.0f ? 0.0f : v;
        }
    }
}

static void bias_add(float *restrict a, const float *restrict b, size_t r,
                     size_t n)
{
    for (size_t i = 0; i < r; i++, a += n)
        for (size_t j = 0; j < n; j++)
            a[j] += b[j];
}

/* The weights as the right operands of the forward products, W^T with
 * row and column strides.  On skx, BLIS packs W (after transposing the
 * product for its kernel) 32 rows at a time with a generic strided copy,
 * a tenth of the dense evaluation's time; packed from a transposed copy,
 * made once per call, it reads contiguous columns.  The packed values, and
 * so every result, are the same bits (test_mlp checks the gradient and
 * the losses against the strided layout). */
typedef struct fwd_weights {
    const float *p[3];
    size_t rs[3], cs[3];
    int fused; /* layer 1 by w->l1 from the block's bytes (w->rowp) */
} fwd_weights;

static void transpose(float *restrict t, const float *restrict a, size_t rows,
                      size_t cols)
{
    enum { TB = 16 };
    for (size_t i0 = 0; i0 < rows; i0 += TB)
        for (size_t j0 = 0; j0 < cols; j0 += TB)
            for (size_t i = i0; i < rows && i < i0 + TB; i++)
                for (size_t j = j0; j < cols && j < j0 + TB; j++)
                    t[j * rows + i] = a[i * cols + j];
}

/* The fused first layer (lib/ref/mlp_skx.c) serves the passes without a
 * gradient (which needs the block as floats) on one BLIS thread; with
 * more, BLIS's threaded sgemm gives the same bits. */
static int use_fused(sive_mlp_work *w)
{
    return w->l1 && bli_rntm_num_threads(&w->rntm) == 1;
}

static fwd_weights forward_weights(const sive_mlp *m, sive_mlp_work *w,
                                   const float *theta, int fused)
{
    const size_t in[3] = {m->in, m->h1, m->h2}, out[3] = {m->h1, m->h2, m->out};
    const size_t off[3] = {m->w1, m->w2, m->w3};
    fwd_weights f;
    f.fused = fused;
    if (fused)
        sivei_skx_pack_w1(w->l1, theta + m->w1);
    float *t = w->wt;
    for (int l = 0; l < 3; l++) {
        if (t && !(l == 0 && fused)) { /* W^T as [in][out], row-major */
            transpose(t, theta + off[l], out[l], in[l]);
            f.p[l] = t;
            f.rs[l] = out[l];
            f.cs[l] = 1;
        } else { /* W is [out][in], so W^T has rs 1, cs in */
            f.p[l] = theta + off[l];
            f.rs[l] = 1;
            f.cs[l] = in[l];
        }
        t += t ? in[l] * out[l] : 0;
    }
    return f;
}

/* Forward pass of the r gathered rows: logits into w->z3. */
static void forward_block(const sive_mlp *m, sive_mlp_work *w, const float *theta,
                          const fwd_weights *f, size_t r)
{
    const size_t in = m->in, h1 = m->h1, h2 = m->h2, k = m->out;
    /* A1 = relu(X W1^T / 255 + b1) */
    if (f->fused)
        sivei_skx_layer1(w->l1, w->rowp, r, INPUT_SCALE, w->a1);
    else
        gemm(w, r, h1, in, INPUT_SCALE, w->x, in, 1, f->p[0], f->rs[0], f->cs[0], 0.0f,
             w->a1);
    bias_relu(w->a1, theta + m->b1, r, h1);
    gemm(w, r, h2, h1, 1.0f, w->a1, h1, 1, f->p[1], f->rs[1], f->cs[1], 0.0f, w->a2);
    bias_relu(w->a2, theta + m->b2, r, h2);
    gemm(w, r, k, h2, 1.0f, w->a2, h2, 1, f->p[2], f->rs[2], f->cs[2], 0.0f, w->z3);
    bias_add(w->z3, theta + m->b3, r, k);
}

/* Cross-entropy of one row of logits, as log-sum-exp around the largest
 * logit: (max - z_y) + log1p(sum over the others of exp(z_j - max)), which
 * keeps full relative precision for confidently right rows (loss ~ 1e-8).
 * *argmax receives the first largest logit.  NaN logits give a NaN loss. */
static double row_loss(const float *z, size_t k, unsigned y, size_t *argmax)
{
    size_t am = 0;
    float mx = z[0];
    for (size_t j = 1; j < k; j++)
        if (z[j] > mx) {
            mx = z[j];
            am = j;
        }
    double s = 0.0;
    for (size_t j = 0; j < k; j++)
        if (j != am)
            s += exp((double)z[j] - (double)mx);
    if (argmax)
        *argmax = am;
    if (isnan(mx))
        return mx;
    return ((double)mx - (double)z[y]) + log1p(s);
}

/* Replace a row of logits by scale * (softmax(z) - onehot(y)), the
 * gradient of scale * loss; returns the loss. */
static double row_loss_grad(float *z, size_t k, unsigned y, float scale)
{
    if (k <= 64) {
        /* row_loss() and the softmax share the exponentials: the same
         * values summed in the same order as computing them twice */
        size_t am = 0;
        float mxf = z[0];
        for (size_t j = 1; j < k; j++)
            if (z[j] > mxf) {
                mxf = z[j];
                am = j;
            }
        const double mx = mxf;
        double e[64], sum = 0.0, s = 0.0;
        for (size_t j = 0; j < k; j++)
            sum += (e[j] = exp((double)z[j] - mx));
        for (size_t j = 0; j < k; j++)
            if (j != am)
                s += e[j];
        double loss = isnan(mxf) ? (double)mxf
                                 : (mx - (double)z[y]) + log1p(s);
        for (size_t j = 0; j < k; j++)
            z[j] = (float)(scale * (e[j] / sum - (j == y)));
        return loss;
    }
    size_t am;
    double loss = row_loss(z, k, y, &am);
    double mx = z[am];
    double sum = 0.0;
    for (size_t j = 0; j < k; j++)
        sum += exp((double)z[j] - mx);
    for (size_t j = 0; j < k; j++)
        z[j] = (float)(scale * (exp((double)z[j] - mx) / sum - (j == y)));
    return loss;
}

#if SIVE_MLP_VECTOR
typedef double v2d __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));

/* acc[j..j+3] += v (widened to double, element by element) */
static inline void acc4(double *restrict acc, v4f v)
{
    v2d lo, hi;
    memcpy(&lo, acc, sizeof lo);
    memcpy(&hi, acc + 2, sizeof hi);
    lo += __builtin_convertvector(((v2f){v[0], v[1]}), v2d);
    hi += __builtin_convertvector(((v2f){v[2], v[3]}), v2d);
    memcpy(acc, &lo, sizeof lo);
    memcpy(acc + 2, &hi, sizeof hi);
}
#endif

/* d = (a > 0) ? d : 0 row-wise, and acc[j] += sum_i d[i][j]: the ReLU
 * backward fused with the bias gradient.  Vectorised across j, so every
 * acc[j] still adds its rows in order (the scalar loop's result). */
static void relu_back(float *restrict d, const float *restrict a,
                      double *restrict acc, size_t r, size_t n)
{
    for (size_t i = 0; i < r; i++, d += n, a += n) {
        size_t j = 0;
#if SIVE_MLP_VECTOR
        for (; j + 4 <= n; j += 4) {
            v4f vd, va;
            memcpy(&vd, d + j, sizeof vd);
            memcpy(&va, a + j, sizeof va);
            vd = (v4f)((v4i)vd & (va > (v4f){0.0f, 0.0f, 0.0f, 0.0f}));
            memcpy(d + j, &vd, sizeof vd);
            acc4(acc + j, vd);
        }
#endif
        for (; j < n; j++) {
            float v = a[j] > 0.0f ? d[j] : 0.0f;
            d[j] = v;
            acc[j] += v;
        }
    }
}

static void col_sums(const float *restrict d, double *restrict acc, size_t r,
                     size_t n)
{
    for (size_t i = 0; i < r; i++, d += n) {
        size_t j = 0;
#if SIVE_MLP_VECTOR
        for (; j + 4 <= n; j += 4) {
            v4f vd;
            memcpy(&vd, d + j, sizeof vd);
            acc4(acc + j, vd);
        }
#endif
        for (; j < n; j++)
            acc[j] += d[j];
    }
}

/* ------------------------------------------------------------------ */
/* Public compute functions                                           */
/* ------------------------------------------------------------------ */

int sive_mlp_example_losses(const sive_mlp *m, sive_mlp_work *w,
                            const float *theta, const sive_dataset *ds,
                            const uint64_t *idx, size_t n, double *loss_out)
{
    static const char fn[] = "sive_mlp_example_losses";
    int rc = check_batch(fn, m, w, theta, ds, idx, loss_out, "loss_out", n, "n = 0");
    if (rc)
        return rc;
    rows_src src = make_src(ds, idx);
    const fwd_weights fw = forward_weights(m, w, theta, use_fused(w));
    for (size_t s = 0; s < n; s += w->fwd_rows) {
        size_t r = n - s < w->fwd_rows ? n - s : w->fwd_rows;
        if ((rc = gather(fn, m, w, &src, s, r, fw.fused)))
            return rc;
        forward_block(m, w, theta, &fw, r);
        for (size_t i = 0; i < r; i++)
            loss_out[s + i] = row_loss(w->z3 + i * m->out, m->out, w->y[i], NULL);
    }
    return SIVE_OK;
}

int sive_mlp_group_losses(const sive_mlp *m, sive_mlp_work *w,
                          const float *theta, const sive_dataset *ds,
                          const uint64_t *idx, size_t n_groups,
                          size_t group_size, double *group_loss)
{
    static const char fn[] = "sive_mlp_group_losses";
    const size_t n = group_size && n_groups <= SIZE_MAX / group_size ? n_groups * group_size : 0;
    int rc = check_batch(fn, m, w, theta, ds, idx, group_loss, "group_loss", n,
                         "bad group counts");
    if (rc)
        return rc;
    rows_src src = make_src(ds, idx);
    const fwd_weights fw = forward_weights(m, w, theta, use_fused(w));
    for (size_t g = 0; g < n_groups; g++)
        group_loss[g] = 0.0;
    size_t g = 0, pos = 0; /* group and position of the next row */
    for (size_t s = 0; s < n; s += w->fwd_rows) {
        size_t r = n - s < w->fwd_rows ? n - s : w->fwd_rows;
        if ((rc = gather(fn, m, w, &src, s, r, fw.fused)))
            return rc;
        forward_block(m, w, theta, &fw, r);
        for (size_t i = 0; i < r; i++) {
            group_loss[g] += row_loss(w->z3 + i * m->out, m->out, w->y[i], NULL);
            if (++pos == group_size) {
                pos = 0;
                g++;
            }
        }
    }
    for (size_t k = 0; k < n_groups; k++)
        group_loss[k] /= (double)group_size;
    return SIVE_OK;
}

int sive_mlp_evaluate(const sive_mlp *m, sive_mlp_work *w, const float *theta,
                      const sive_dataset *ds, double *mean_loss,
                      double *accuracy)
{
    static const char fn[] = "sive_mlp_evaluate";
    int rc = check_common(fn, m, w, theta, ds);
    if (rc)
        return rc;
    const size_t n = sive_dataset_count(ds);
    if (n == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: empty data set", fn);
    rows_src src = make_src(ds, NULL);
    const fwd_weights fw = forward_weights(m, w, theta, use_fused(w));
    double sum = 0.0;
    size_t correct = 0;
    for (size_t s = 0; s < n; s += w->fwd_rows) {
        size_t r = n - s < w->fwd_rows ? n - s : w->fwd_rows;
        if ((rc = gather(fn, m, w, &src, s, r, fw.fused)))
            return rc;
        forward_block(m, w, theta, &fw, r);
        for (size_t i = 0; i < r; i++) {
            size_t am;
            sum += row_loss(w->z3 + i * m->out, m->out, w->y[i], &am);
            correct += am == w->y[i];
        }
    }
    if (mean_loss)
        *mean_loss = sum / (double)n;
    if (accuracy)
        *accuracy = (double)correct / (double)n;
    return SIVE_OK;
}

int sive_mlp_loss_grad(const sive_mlp *m, sive_mlp_work *w, const float *theta,
                       const sive_dataset *ds, const uint64_t *idx, size_t n,
                       float *grad, double *mean_loss)
{
    static const char fn[] = "sive_mlp_loss_grad";
    int rc = check_batch(fn, m, w, theta, ds, idx, grad, "grad", n, "n = 0");
    if (rc)
        return rc;
    const size_t in = m->in, h1 = m->h1, h2 = m->h2, k = m->out;
    const float scale = (float)(1.0 / (double)n);
    double *gb1 = w->gb, *gb2 = gb1 + h1, *gb3 = gb2 + h2;
    memset(w->gb, 0, (h1 + h2 + k) * sizeof(double));
    float *gw1 = grad + m->w1, *gw2 = grad + m->w2, *gw3 = grad + m->w3;
    rows_src src = make_src(ds, idx);
    const fwd_weights fw = forward_weights(m, w, theta, 0);
    double sum = 0.0;
    for (size_t s = 0; s < n; s += w->rows) {
        size_t r = n - s < w->rows ? n - s : w->rows;
        /* the first block overwrites the weight gradients, later ones add */
        float beta = s == 0 ? 0.0f : 1.0f;
        double t0 = 0.0;
        const int set = adapt_begin(w, &t0);
        if ((rc = gather(fn, m, w, &src, s, r, 0)))
            return rc;
        forward_block(m, w, theta, &fw, r);
        for (size_t i = 0; i < r; i++)
            sum += row_loss_grad(w->z3 + i * k, k, w->y[i], scale);
        /* layer 3: dW3 += dZ3^T A2, db3 += colsum dZ3, dA2 = dZ3 W3 */
        col_sums(w->z3, gb3, r, k);
        gemm(w, k, h2, r, 1.0f, w->z3, 1, k, w->a2, h2, 1, beta, gw3);
        gemm(w, r, h2, k, 1.0f, w->z3, k, 1, theta + m->w3, h2, 1, 0.0f, w->d2);
        relu_back(w->d2, w->a2, gb2, r, h2);
        /* layer 2 */
        gemm(w, h2, h1, r, 1.0f, w->d2, 1, h2, w->a1, h1, 1, beta, gw2);
        gemm(w, r, h1, h2, 1.0f, w->d2, h2, 1, theta + m->w2, h1, 1, 0.0f, w->d1);
        relu_back(w->d1, w->a1, gb1, r, h1);
        /* layer 1: the inputs are bytes, hence the 1/255 */
        gemm(w, h1, in, r, INPUT_SCALE, w->d1, 1, h1, w->x, in, 1, beta, gw1);
        adapt_end(w, set, t0, r);
    }
    for (size_t j = 0; j < h1; j++)
        grad[m->b1 + j] = (float)gb1[j];
    for (size_t j = 0; j < h2; j++)
        grad[m->b2 + j] = (float)gb2[j];
    for (size_t j = 0; j < k; j++)
        grad[m->b3 + j] = (float)gb3[j];
    if (mean_loss)
        *mean_loss = sum / (double)n;
    return SIVE_OK;
}

int sive_mlp_train_epoch(const sive_mlp *m, sive_mlp_work *w, float *theta,
                         const sive_dataset *ds, float lr, size_t batch,
                         uint64_t seed, uint64_t epoch, double *mean_train_loss)
{
    static const char fn[] = "sive_mlp_train_epoch";
    int rc = check_common(fn, m, w, theta, ds);
    if (rc)
        return rc;
    if (!(lr > 0.0f) || !isfinite(lr) || batch == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: lr must be finite and > 0, batch >= 1", fn);
    const size_t n = sive_dataset_count(ds);
    if (n == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: empty data set", fn);
    if (n > SIZE_MAX / sizeof(uint64_t))
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: data set too large", fn);
    uint64_t *perm = malloc(n * sizeof *perm);
    float *grad = malloc(m->dim * sizeof *grad);
    if (!perm || !grad) {
        free(perm);
        free(grad);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    }
    /* Fisher-Yates from the (seed, epoch) stream */
    sive_rng g;
    sive_rng_stream(&g, seed, epoch, PURPOSE_SHUFFLE);
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)sive_rng_below(&g, (uint64_t)i + 1);
        uint64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    double total = 0.0;
    for (size_t s = 0; s < n; s += batch) {
        size_t b = n - s < batch ? n - s : batch;
        double loss;
        rc = sive_mlp_loss_grad(m, w, theta, ds, perm + s, b, grad, &loss);
        if (rc)
            break;
        total += loss * (double)b;
        for (size_t i = 0; i < m->dim; i++)
            theta[i] -= lr * grad[i];
    }
    free(perm);
    free(grad);
    if (!rc && mean_train_loss)
        *mean_train_loss = total / (double)n;
    return rc;
}

/* ------------------------------------------------------------------ */
/* Per-example pieces at a fixed theta (internal.h)                   */
/* ------------------------------------------------------------------ */

/* Row layout (floats): A1, A2, D1, D2 (after the ReLU masks), dZ3 =
 * softmax - onehot (unscaled), then the loss as a double in two floats. */
size_t sivei_mlp_piece_width(const sive_mlp *m)
{
    return 2 * m->h1 + 2 * m->h2 + m->out + 2;
}

int sivei_mlp_pieces(const sive_mlp *m, sive_mlp_work *w, const float *theta,
                     const sive_dataset *ds, const uint64_t *idx, size_t n, float *rows)
{
    static const char fn[] = "sive_mlp_loss_grad";
    const size_t h1 = m->h1, h2 = m->h2, k = m->out, P = sivei_mlp_piece_width(m);
    rows_src src = make_src(ds, idx);
    const fwd_weights fw = forward_weights(m, w, theta, 0);
    int rc = SIVE_OK;
    for (size_t s = 0; s < n && !rc; s += w->rows) {
        size_t r = n - s < w->rows ? n - s : w->rows;
        if ((rc = gather(fn, m, w, &src, s, r, 0)))
            break;
        forward_block(m, w, theta, &fw, r);
        for (size_t i = 0; i < r; i++) {
            double l = row_loss_grad(w->z3 + i * k, k, w->y[i], 1.0f);
            memcpy(rows + idx[s + i] * P + P - 2, &l, sizeof l);
        }
        gemm(w, r, h2, k, 1.0f, w->z3, k, 1, theta + m->w3, h2, 1, 0.0f, w->d2);
        relu_back(w->d2, w->a2, w->gb, r, h2); /* w->gb: unused sums */
        gemm(w, r, h1, h2, 1.0f, w->d2, h2, 1, theta + m->w2, h1, 1, 0.0f, w->d1);
        relu_back(w->d1, w->a1, w->gb, r, h1);
        for (size_t i = 0; i < r; i++) {
            float *row = rows + idx[s + i] * P;
            memcpy(row, w->a1 + i * h1, h1 * sizeof *row);
            memcpy(row + h1, w->a2 + i * h2, h2 * sizeof *row);
            memcpy(row + h1 + h2, w->d1 + i * h1, h1 * sizeof *row);
            memcpy(row + 2 * h1 + h2, w->d2 + i * h2, h2 * sizeof *row);
            memcpy(row + 2 * h1 + 2 * h2, w->z3 + i * k, k * sizeof *row);
        }
    }
    return rc;
}

/* acc[j] += sum_i d[i*ld + j], j < n (in row order, in double). */
static void col_sums_strided(const float *d, size_t ld, double *acc, size_t r, size_t n)
{
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < n; j++)
            acc[j] += d[i * ld + j];
}

/* The batch gradient from the pieces: per block the three weight products
 * of sive_mlp_loss_grad() on gathered rows (no forward pass, no deltas). */
int sivei_mlp_pieces_grad(const sive_mlp *m, sive_mlp_work *w, const float *rows,
                          const sive_dataset *ds, const uint64_t *idx, size_t n,
                          float *buf, float *grad, double *mean_loss)
{
    static const char fn[] = "sive_mlp_loss_grad";
    const size_t in = m->in, h1 = m->h1, h2 = m->h2, k = m->out;
    const size_t P = sivei_mlp_piece_width(m);
    const float scale = (float)(1.0 / (double)n);
    double *gb1 = w->gb, *gb2 = gb1 + h1, *gb3 = gb2 + h2, sum = 0.0;
    memset(w->gb, 0, (h1 + h2 + k) * sizeof(double));
    rows_src src = make_src(ds, idx);
    for (size_t s = 0; s < n; s += w->rows) {
        size_t r = n - s < w->rows ? n - s : w->rows;
        float beta = s == 0 ? 0.0f : 1.0f;
        int rc = gather(fn, m, w, &src, s, r, 0);
        if (rc)
            return rc;
        for (size_t i = 0; i < r; i++) {
            double l;
            memcpy(buf + i * P, rows + idx[s + i] * P, P * sizeof *buf);
            memcpy(&l, buf + i * P + P - 2, sizeof l);
            sum += l;
        }
        const float *a1 = buf, *a2 = buf + h1, *d1 = buf + h1 + h2,
                    *d2 = buf + 2 * h1 + h2, *z3 = buf + 2 * h1 + 2 * h2;
        col_sums_strided(z3, P, gb3, r, k);
        col_sums_strided(d2, P, gb2, r, h2);
        col_sums_strided(d1, P, gb1, r, h1);
        gemm(w, k, h2, r, scale, z3, 1, P, a2, P, 1, beta, grad + m->w3);
        gemm(w, h2, h1, r, scale, d2, 1, P, a1, P, 1, beta, grad + m->w2);
        gemm(w, h1, in, r, scale * INPUT_SCALE, d1, 1, P, w->x, in, 1, beta, grad + m->w1);
    }
    for (size_t j = 0; j < h1; j++)
        grad[m->b1 + j] = (float)(gb1[j] * scale);
    for (size_t j = 0; j < h2; j++)
        grad[m->b2 + j] = (float)(gb2[j] * scale);
    for (size_t j = 0; j < k; j++)
        grad[m->b3 + j] = (float)(gb3[j] * scale);
    if (mean_loss)
        *mean_loss = sum / (double)n;
    return SIVE_OK;
}

size_t sivei_mlp_work_rows(const sive_mlp_work *w) { return w->rows; }
