/* Which BLIS kernels the MLP runs on.  Debian's BLIS 0.9 picks its kernel
 * set from CPUID and knows AMD families up to 0x19 (Zen 3 and Zen 4); on a
 * later family with AVX2 and FMA (Zen 5 is 0x1a) it falls back to its
 * generic reference kernels, about 3x slower sgemm.  Its supported override
 * is the environment variable BLIS_ARCH_TYPE (an arch_t id), read once
 * when BLIS first asks which architecture it runs on.  BLIS 0.9 aborts
 * ("Accessed uninitialized context in gks") when that first query comes
 * before bli_init() has registered the kernel sets, so the override works
 * only when bli_init() runs first, which this module does.  The variable
 * is set only for that moment and removed again, so child processes are
 * not affected. */
#include "internal.h"
#include "sive/mlp.h"

#include <blis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_CPUID 1
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char description[160];

/* AMD family of this CPU, or 0 on other vendors / architectures. */
static unsigned amd_family(void)
{
#ifdef HAVE_CPUID
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541u) /* "Auth"enticAMD */
        return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned fam = (a >> 8) & 0xf;
    return fam == 0xf ? fam + ((a >> 20) & 0xff) : fam;
#else
    return 0;
#endif
}

/* BLIS 0.9 would use generic kernels here, and AVX2 + FMA are available. */
static int needs_override(unsigned family)
{
#if defined(HAVE_CPUID) && defined(BLIS_CONFIG_ZEN3)
    __builtin_cpu_init();
    return family > 0x19 && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
#else
    (void)family;
    return 0;
#endif
}

static void choose(void)
{
    const char *opt = getenv("SIVE_BLIS_AUTO");
    unsigned fam = amd_family();
    int forced = 0;
    if (!(opt && strcmp(opt, "0") == 0) && !getenv("BLIS_ARCH_TYPE") &&
        needs_override(fam)) {
#ifdef BLIS_CONFIG_ZEN3
        char id[16];
        snprintf(id, sizeof id, "%d", (int)BLIS_ARCH_ZEN3);
        forced = setenv("BLIS_ARCH_TYPE", id, 0) == 0;
#endif
    }
    bli_init();
    const char *arch = bli_arch_string(bli_arch_query_id());
    if (forced) {
        unsetenv("BLIS_ARCH_TYPE");
        snprintf(description, sizeof description,
                 "%s (chosen by libsive: BLIS %s has no kernels for AMD family 0x%x "
                 "and would use generic ones; SIVE_BLIS_AUTO=0 disables this)",
                 arch, bli_info_get_version_str(), fam);
    } else {
        snprintf(description, sizeof description, "%s", arch);
    }
}

const char *sive_mlp_blis_kernels(void)
{
    pthread_once(&once, choose);
    return description;
}
