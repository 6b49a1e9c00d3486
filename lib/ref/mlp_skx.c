/* The MLP's first layer on skx without BLIS's packing (lib/ref/mlp_skx.h).
 *
 * BLIS computes X W1^T (r x in . in x h1, C row-major) as its transpose,
 * C^T = W1 X^T, for its column-preferring skx kernel: W1 in 32-row
 * panels, X^T in 12-column panels (12 rows of X interleaved), K = in split
 * into KC blocks (784 = 384 + 400).  Its pack of X^T is a scalar strided
 * copy, 11.5 % of the dense evaluation, after the gather has converted
 * the bytes to floats (6 %).  Here the 12 examples' bytes go straight into
 * the panel, converted and interleaved in registers (AVX-512 VBMI byte
 * permutes), and BLIS's own micro-kernel runs on it with BLIS's K split
 * and the same alpha and beta per block, so every product is the same
 * bits as BLIS's (test_mlp checks it against the plain layout).  W1 is
 * packed once per call. */
#include "mlp_skx.h"

#include <blis.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_FUSED 1
#else
#define HAVE_FUSED 0
#endif

enum { MR = 32, NR = 12, MAX_KB = 64 };

struct sivei_skx {
    sgemm_ukr_ft ukr;
    cntx_t *cntx;
    size_t in, h1, h1p;       /* h1p: h1 rounded up to MR */
    size_t kb[MAX_KB], nkb;   /* BLIS's K blocks of in */
    float *w1p;               /* h1p x in, MR-row panels, column-major each */
    float *bp;                /* NR x in: one panel of the block's rows */
    float *ct;                /* MR x NR: edge tile */
    uint8_t *zero;            /* in zero bytes: the missing rows of a panel */
};

static sgemm_ukr_ft ukr_ok; /* the kernel, when the layout is BLIS's skx one */
static cntx_t *cntx_ok;
static dim_t kc_def, kc_max;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void probe(void)
{
#if HAVE_FUSED
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((c >> 1) & 1)) /* VBMI */
        return;
    cntx_t *cx = bli_gks_query_cntx();
    if (bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_MR, cx) != MR ||
        bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_NR, cx) != NR ||
        bli_cntx_l3_nat_ukr_prefers_rows_dt(BLIS_FLOAT, BLIS_GEMM_UKR, cx))
        return;
    kc_def = bli_cntx_get_blksz_def_dt(BLIS_FLOAT, BLIS_KC, cx);
    kc_max = bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_KC, cx);
    if (kc_def < 1 || kc_max < kc_def)
        return;
    cntx_ok = cx;
    ukr_ok = (sgemm_ukr_ft)bli_cntx_get_l3_nat_ukr_dt(BLIS_FLOAT, BLIS_GEMM_UKR, cx);
#endif
}

sivei_skx *sivei_skx_new(size_t in, size_t h1)
{
    pthread_once(&once, probe);
    if (!ukr_ok || in == 0)
        return NULL;
    sivei_skx *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    /* BLIS's forward K partition (bli_determine_blocksize_f_sub): kc_def
     * at a time until what is left fits in kc_max */
    for (size_t at = 0; at < in; at += k->kb[k->nkb++]) {
        if (k->nkb == MAX_KB) {
            free(k);
            return NULL;
        }
        k->kb[k->nkb] = in - at <= (size_t)kc_max ? in - at : (size_t)kc_def;
    }
    k->ukr = ukr_ok;
    k->cntx = cntx_ok;
    k->in = in;
    k->h1 = h1;
    k->h1p = (h1 + MR - 1) / MR * MR;
    size_t fl = k->h1p * in + NR * in + MR * NR + 64; /* + alignment slack */
    void *mem = NULL;
    if (posix_memalign(&mem, 64, fl * sizeof(float) + in + 64) != 0) {
        free(k);
        return NULL;
    }
    k->w1p = mem;
    k->bp = k->w1p + (k->h1p * in + 15) / 16 * 16;
    k->ct = k->bp + (NR * in + 15) / 16 * 16;
    k->zero = (uint8_t *)(k->ct + MR * NR);
    memset(k->w1p, 0, fl * sizeof(float));
    memset(k->zero, 0, in);
    return k;
}

void sivei_skx_free(sivei_skx *k)
{
    if (k)
        free(k->w1p);
    free(k);
}

void sivei_skx_pack_w1(sivei_skx *k, const float *w1)
{
    const size_t in = k->in;
    for (size_t p = 0; p < k->h1; p += MR) {
        float *q = k->w1p + p * in;
        const size_t rows = k->h1 - p < MR ? k->h1 - p : MR;
        for (size_t i = 0; i < rows; i++)
            for (size_t l = 0; l < in; l++)
                q[l * MR + i] = w1[(p + i) * in + l];
    }
}

#if HAVE_FUSED
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

/* The permutes of a 12 x 16 byte tile (rows in 128-bit lanes of three
 * registers: row j in register j / 4, lane j % 4) into 16 x 12 order,
 * out byte t = l * 12 + j; per output register o: the index for the
 * two-source permute of registers 0 and 1, the index into register 2,
 * and the mask of bytes taken from register 2. */
static uint8_t perm01[3][64], perm2[3][64];
static __mmask64 from2[3];
static pthread_once_t perm_once = PTHREAD_ONCE_INIT;

static void make_perms(void)
{
    for (int t = 0; t < 192; t++) {
        int o = t / 64, b = t % 64, l = t / 12, j = t % 12;
        int src = 16 * (j % 4) + l;
        if (j / 4 == 2) {
            perm2[o][b] = (uint8_t)src;
            from2[o] |= (__mmask64)1 << b;
        } else {
            perm01[o][b] = (uint8_t)(src + 64 * (j / 4));
        }
    }
}

/* Panel p[l * 12 + j] = row j's byte l as a float, l < in, j < 12. */
TGT static void pack_rows(float *restrict p, const uint8_t *const *row, size_t in)
{
    __m512i i01[3], i2[3];
    for (int o = 0; o < 3; o++) {
        i01[o] = _mm512_loadu_si512(perm01[o]);
        i2[o] = _mm512_loadu_si512(perm2[o]);
    }
    size_t l = 0;
    for (; l + 16 <= in; l += 16, p += 192) {
        __m512i z[3];
        for (int g = 0; g < 3; g++) {
            __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const void *)(row[4 * g] + l)));
            v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)(row[4 * g + 1] + l)), 1);
            v = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)(row[4 * g + 2] + l)), 2);
            z[g] = _mm512_inserti32x4(v, _mm_loadu_si128((const void *)(row[4 * g + 3] + l)), 3);
        }
        for (int o = 0; o < 3; o++) {
            __m512i t = _mm512_permutex2var_epi8(z[0], i01[o], z[1]);
            t = _mm512_mask_permutexvar_epi8(t, from2[o], i2[o], z[2]);
            _mm512_storeu_ps(p + 64 * o, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                             _mm512_castsi512_si128(t))));
            _mm512_storeu_ps(p + 64 * o + 16, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                                  _mm512_extracti32x4_epi32(t, 1))));
            _mm512_storeu_ps(p + 64 * o + 32, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                                  _mm512_extracti32x4_epi32(t, 2))));
            _mm512_storeu_ps(p + 64 * o + 48, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                                  _mm512_extracti32x4_epi32(t, 3))));
        }
    }
    for (; l < in; l++, p += NR)
        for (int j = 0; j < NR; j++)
            p[j] = (float)row[j][l];
}

/* C' tile (MR x n, column-major, cs_c) of panel a against the panel in bp:
 * BLIS's K blocks, alpha every block, beta 0 then 1. */
static void tile(const sivei_skx *k, const float *a, float alpha, float *c, size_t cs_c)
{
    float one = 1.0f, zero = 0.0f;
    auxinfo_t aux;
    memset(&aux, 0, sizeof aux);
    bli_auxinfo_set_schema_a(BLIS_PACKED_ROW_PANELS, &aux);
    bli_auxinfo_set_schema_b(BLIS_PACKED_COL_PANELS, &aux);
    const float *b = k->bp;
    for (size_t q = 0; q < k->nkb; q++) {
        const dim_t kq = (dim_t)k->kb[q];
        bli_auxinfo_set_next_a((void *)a, &aux);
        bli_auxinfo_set_next_b((void *)b, &aux);
        k->ukr(MR, NR, kq, &alpha, (float *)a, (float *)b, q ? &one : &zero, c, 1,
               (inc_t)cs_c, &aux, k->cntx);
        a += MR * kq;
        b += NR * kq;
    }
}

void sivei_skx_layer1(sivei_skx *k, const uint8_t *const *rows, size_t r, float alpha,
                      float *c)
{
    pthread_once(&perm_once, make_perms);
    const size_t in = k->in, h1 = k->h1;
    for (size_t j0 = 0; j0 < r; j0 += NR) {
        const size_t n = r - j0 < NR ? r - j0 : NR;
        const uint8_t *pr[NR];
        for (size_t j = 0; j < NR; j++)
            pr[j] = j < n ? rows[j0 + j] : k->zero;
        /* the next panel's rows, random ones that the hardware prefetcher
         * cannot guess, fetched while this panel is multiplied */
        for (size_t j = j0 + NR; j < r && j < j0 + 2 * NR; j++) {
            for (size_t o = 0; o < in; o += 64)
                __builtin_prefetch(rows[j] + o, 0, 3);
            __builtin_prefetch(rows[j] + in - 1, 0, 3);
        }
        pack_rows(k->bp, pr, in);
        for (size_t i0 = 0; i0 < h1; i0 += MR) {
            const float *a = k->w1p + i0 * in;
            if (n == NR && i0 + MR <= h1) {
                tile(k, a, alpha, c + j0 * h1 + i0, h1);
                continue;
            }
            /* edge: through a full tile, then the part that exists */
            tile(k, a, alpha, k->ct, MR);
            for (size_t j = 0; j < n; j++)
                for (size_t i = 0; i < MR && i0 + i < h1; i++)
                    c[(j0 + j) * h1 + i0 + i] = k->ct[j * MR + i];
        }
    }
}
#else
void sivei_skx_layer1(sivei_skx *k, const uint8_t *const *rows, size_t r, float alpha,
                      float *c)
{
    (void)k, (void)rows, (void)r, (void)alpha, (void)c;
}
#endif
