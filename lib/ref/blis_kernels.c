/* Which BLIS kernels the MLP runs on.  Debian's BLIS 0.9 picks its kernel
 * set from CPUID tables that predate recent CPUs:
 *  - on AMD family 0x1a and later (Zen 5) it falls back to its generic
 *    reference kernels, about 3x slower sgemm than zen3;
 *  - on an Intel CPU with AVX-512 it takes skx only when its table of
 *    model names says the CPU has two 512-bit FMA units, and haswell
 *    otherwise -- also for Sapphire/Emerald Rapids, whose name it does not
 *    list (about 1.8x slower sgemm than skx there).
 * libsive fills those gaps: CPUID says which kernel sets the CPU can run
 * (skx needs AVX-512 F/DQ/BW/VL with the ZMM state enabled by the OS; the
 * AVX2 sets need AVX2 + FMA), and where BLIS's table would have to know
 * the number of 512-bit FMA units, libsive measures it: the time of a
 * burst of independent 512-bit FMAs against the same count of 256-bit
 * ones (about 1.5 ms, at first use).  Two full-width units run both at the same
 * rate; one unit (or a 256-bit datapath, AMD Zen 4) takes twice as long at
 * 512 bits, and then the AVX2 set BLIS picks itself is the right one.
 * Timing sgemm with each candidate set instead is not possible in one
 * process: BLIS fixes its set at initialisation and exports no way to
 * reach the others.
 *
 * The override is BLIS's own: the environment variable BLIS_ARCH_TYPE (an
 * arch_t id), read once when BLIS first asks which architecture it runs
 * on.  BLIS 0.9 aborts ("Accessed uninitialized context in gks") when
 * that first query comes before bli_init() has registered the kernel
 * sets, so the override works only when bli_init() runs first, which this
 * module does.  BLIS checks neither that the CPU can run the set nor that
 * the set is built in: libsive forces only sets this BLIS build contains
 * (BLIS_CONFIG_*) and CPUID allows.  The variable is set only for that
 * moment and removed again, so child processes are not affected. */
#include "blis_kernels.h"
#include "sive/mlp.h"

#include <blis.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_CPUID 1
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char description[320];

/* ------------------------------------------------------------------ */
/* What the CPU supports                                              */
/* ------------------------------------------------------------------ */

#ifdef HAVE_CPUID
/* XCR0: which register states the OS saves (needs OSXSAVE). */
static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

void sivei_cpu_query(sivei_cpu *c)
{
    memset(c, 0, sizeof *c);
#ifdef HAVE_CPUID
    unsigned a, b, cx, d, max;
    if (!__get_cpuid(0, &max, &b, &cx, &d))
        return;
    if (b == 0x756e6547u) /* "Genu"ineIntel */
        c->vendor = SIVEI_CPU_INTEL;
    else if (b == 0x68747541u) /* "Auth"enticAMD */
        c->vendor = SIVEI_CPU_AMD;
    if (!__get_cpuid(1, &a, &b, &cx, &d))
        return;
    unsigned fam = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
    if (fam == 0x6 || fam == 0xf)
        model += ((a >> 16) & 0xf) << 4;
    c->family = fam == 0xf ? fam + ((a >> 20) & 0xff) : fam;
    c->model = model;
    int fma = (cx >> 12) & 1, avx = (cx >> 28) & 1, osxsave = (cx >> 27) & 1;
    if (!osxsave || !avx || max < 7)
        return;
    unsigned long long x = xcr0();
    unsigned a7, b7, c7, d7;
    __cpuid_count(7, 0, a7, b7, c7, d7);
    (void)a7, (void)c7, (void)d7;
    int ymm = (x & 0x6) == 0x6, zmm = (x & 0xe6) == 0xe6;
    c->avx2_fma = ymm && fma && ((b7 >> 5) & 1);
    unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31); /* F DQ BW VL */
    c->avx512 = c->avx2_fma && zmm && (b7 & avx512) == avx512;
#endif
}

/* ------------------------------------------------------------------ */
/* 512-bit against 256-bit FMA throughput                             */
/* ------------------------------------------------------------------ */

#ifdef HAVE_CPUID
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* n rounds of 12 independent FMA chains on zero registers (enough to fill
 * two pipelines of latency 4 to 6; zeros keep denormals out).  Written in
 * assembly so that the loop is the same in every build: compiled C at -O1
 * with sanitizers spills the vectors to the stack and would time memory
 * instead of FMA units. */
#define FMA12(R)                                                                  \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "0\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "1\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "2\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "3\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "4\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "5\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "6\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "7\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "8\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "9\n\t"                              \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "10\n\t"                             \
    "vfmadd231ps %%" R "12, %%" R "13, %%" R "11\n\t"
#define FMA_CLOBBERS                                                              \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
        "xmm10", "xmm11", "xmm12", "xmm13", "cc"

/* (Zeroing the xmm register zeroes the whole ymm / zmm register.) */
#define FMA_ZERO                                                                  \
    "vxorps %%xmm0, %%xmm0, %%xmm0\n\tvxorps %%xmm1, %%xmm1, %%xmm1\n\t"         \
    "vxorps %%xmm2, %%xmm2, %%xmm2\n\tvxorps %%xmm3, %%xmm3, %%xmm3\n\t"         \
    "vxorps %%xmm4, %%xmm4, %%xmm4\n\tvxorps %%xmm5, %%xmm5, %%xmm5\n\t"         \
    "vxorps %%xmm6, %%xmm6, %%xmm6\n\tvxorps %%xmm7, %%xmm7, %%xmm7\n\t"         \
    "vxorps %%xmm8, %%xmm8, %%xmm8\n\tvxorps %%xmm9, %%xmm9, %%xmm9\n\t"         \
    "vxorps %%xmm10, %%xmm10, %%xmm10\n\tvxorps %%xmm11, %%xmm11, %%xmm11\n\t"   \
    "vxorps %%xmm12, %%xmm12, %%xmm12\n\tvxorps %%xmm13, %%xmm13, %%xmm13\n\t"

static void fma512(long n)
{
    __asm__ volatile(FMA_ZERO "1:\n\t" FMA12("zmm") "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(n)
                     :
                     : FMA_CLOBBERS);
}

static void fma256(long n)
{
    __asm__ volatile(FMA_ZERO "1:\n\t" FMA12("ymm") "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(n)
                     :
                     : FMA_CLOBBERS);
}

/* Best time of 512-bit over best time of 256-bit FMA bursts, interleaved so
 * that both see the same load; about 1.5 ms a block.  Load only adds time,
 * so the best of more bursts is closer to the truth: while the ratio is
 * inside the undecided band (seen on a loaded machine: 1.32 where a quiet
 * one gives 0.93-1.07), measure further blocks, up to SIVEI_FMA_BLOCKS
 * (about 50 ms in all); sivei_blis_pick() keeps BLIS's choice for a ratio
 * still inside the band, so that two processes on one busy machine do not
 * pick different sets (and so different last bits). */
double sivei_fma_ratio(void)
{
    const long n = 4000;
    double best[2] = {1e30, 1e30}, ratio = 0.0;
    /* Intel CPUs run 512-bit code at reduced throughput for some hundred
     * microseconds while the wide units power up: warm them for 1 ms. */
    for (double t0 = now(); now() - t0 < 1e-3;)
        fma512(n);
    for (int block = 0; block < SIVEI_FMA_BLOCKS; block++) {
        for (int r = 0; r < 16; r++) {
            for (int k = 0; k < 2; k++) {
                double t0 = now();
                if (k)
                    fma256(n);
                else
                    fma512(n);
                double t = now() - t0;
                best[k] = t < best[k] ? t : best[k];
            }
        }
        ratio = best[1] > 0 ? best[0] / best[1] : 0.0;
        if (!sivei_fma_undecided(ratio))
            break;
    }
    return ratio;
}
#else
double sivei_fma_ratio(void)
{
    return 0.0;
}
#endif

/* ------------------------------------------------------------------ */
/* The choice                                                         */
/* ------------------------------------------------------------------ */

int sivei_fma_undecided(double ratio)
{
    return ratio > SIVEI_FMA_RATIO_TWO_UNITS - SIVEI_FMA_BAND &&
           ratio < SIVEI_FMA_RATIO_TWO_UNITS + SIVEI_FMA_BAND;
}

int sivei_cpu_half_width(const sivei_cpu *c)
{
    return c->vendor == SIVEI_CPU_AMD && c->family == 0x19;
}

int sivei_blis_pick(const sivei_cpu *c, double ratio, char *why, size_t len)
{
    if (c->avx512 && sivei_cpu_half_width(c)) {
        snprintf(why, len, "AMD family 0x19 (Zen 4) runs 512-bit FMAs on 256-bit datapaths");
        return -1;
    }
    /* an undecided ratio takes the choice without skx, as one unit would */
    char undecided[120] = "";
    if (c->avx512 && sivei_fma_undecided(ratio))
        snprintf(undecided, sizeof undecided,
                 "512-bit / 256-bit FMA time %.2f undecided (between %.2f and %.2f: a busy "
                 "machine); not skx", ratio, SIVEI_FMA_RATIO_TWO_UNITS - SIVEI_FMA_BAND,
                 SIVEI_FMA_RATIO_TWO_UNITS + SIVEI_FMA_BAND);
#ifdef BLIS_CONFIG_SKX
    if (c->avx512 && !*undecided && ratio > 0 && ratio < SIVEI_FMA_RATIO_TWO_UNITS) {
        snprintf(why, len,
                 "AVX-512 F/DQ/BW/VL with two 512-bit FMA units (512-bit / 256-bit "
                 "FMA time %.2f)", ratio);
        return BLIS_ARCH_SKX;
    }
#endif
#ifdef BLIS_CONFIG_ZEN3
    if (c->vendor == SIVEI_CPU_AMD && c->family > 0x19 && c->avx2_fma) {
        snprintf(why, len,
                 "BLIS %s has no kernels for AMD family 0x%x and would use generic ones%s%s",
                 bli_info_get_version_str(), c->family, *undecided ? "; " : "", undecided);
        return BLIS_ARCH_ZEN3;
    }
#endif
    if (*undecided)
        snprintf(why, len, "%s", undecided);
    else if (c->avx512 && ratio > 0)
        snprintf(why, len, "one 512-bit FMA unit (512-bit / 256-bit FMA time %.2f)", ratio);
    else
        snprintf(why, len, "%s", c->avx2_fma ? "no AVX-512" : "no AVX2 + FMA");
    return -1;
}

/* The kernel set to force, or -1; why says the reason either way. */
static int auto_pick(char *why, size_t len)
{
    sivei_cpu c;
    sivei_cpu_query(&c);
    double ratio = 0.0;
#ifdef HAVE_CPUID
    if (c.avx512 && !sivei_cpu_half_width(&c)) /* the CPU model already says */
        ratio = sivei_fma_ratio();
#endif
    return sivei_blis_pick(&c, ratio, why, len);
}

static void choose(void)
{
    const char *opt = getenv("SIVE_BLIS_AUTO");
    const char *user = getenv("BLIS_ARCH_TYPE");
    char why[200] = "";
    int want = -1, forced = 0;
    if (user)
        snprintf(why, sizeof why, "BLIS_ARCH_TYPE=%.16s set by the user", user);
    else if (opt && strcmp(opt, "0") == 0)
        snprintf(why, sizeof why, "BLIS's choice: SIVE_BLIS_AUTO=0");
    else if ((want = auto_pick(why, sizeof why)) >= 0) {
        char id[16];
        snprintf(id, sizeof id, "%d", want);
        forced = setenv("BLIS_ARCH_TYPE", id, 0) == 0;
    }
    bli_init();
    arch_t got = bli_arch_query_id();
    const char *arch = bli_arch_string(got);
    if (forced)
        unsetenv("BLIS_ARCH_TYPE");
    if (forced && (int)got == want)
        snprintf(description, sizeof description,
                 "%s (chosen by libsive: %s; SIVE_BLIS_AUTO=0 keeps BLIS's choice)", arch,
                 why);
    else if (want >= 0)
        snprintf(description, sizeof description,
                 "%s (BLIS's choice: it was initialised before libsive could select %s "
                 "for %s)", arch, bli_arch_string((arch_t)want), why);
    else if (user || (opt && strcmp(opt, "0") == 0))
        snprintf(description, sizeof description, "%s (%s)", arch, why);
    else
        snprintf(description, sizeof description, "%s (BLIS's choice; libsive: %s)", arch,
                 why);
}

const char *sive_mlp_blis_kernels(void)
{
    pthread_once(&once, choose);
    return description;
}
