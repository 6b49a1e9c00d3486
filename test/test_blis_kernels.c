/* libsive's choice of BLIS kernel set (lib/ref/blis_kernels.c): the set it
 * runs is one this CPU can execute (checked against the compiler's own
 * CPU detection, not libsive's), its CPUID reading agrees with the
 * compiler's, the decision table on made-up CPUs, and the two
 * environment overrides; and the per-worker choice between one BLIS thread
 * and several (lib/ref/thread_adapt.c) on simulated block times.  Each test case runs in its own process (Check
 * forks), so each sees BLIS initialised afresh; the override cases skip
 * themselves when CK_FORK=no. */
#include "blis_kernels.h"
#include "thread_adapt.h"

#include <sive/mlp.h>

#include "check_run.h"

#include <blis.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel set's name: the text up to the first space. */
static void kernel_name(char *out, size_t len)
{
    const char *d = sive_mlp_blis_kernels();
    size_t n = strcspn(d, " ");
    ck_assert_uint_lt(n, len);
    memcpy(out, d, n);
    out[n] = 0;
}

#if defined(__x86_64__) || defined(__i386__)
#define CPU_HAS(f) __builtin_cpu_supports(f)
#else
#define CPU_HAS(f) 0
#endif

/* Can this CPU run BLIS's kernel set `name`?  (x86 sets only; others
 * would need their own entry.) */
static int cpu_runs(const char *name)
{
    if (!strcmp(name, "generic"))
        return 1;
    if (!strcmp(name, "skx"))
        return CPU_HAS("avx512f") && CPU_HAS("avx512dq") && CPU_HAS("avx512bw") &&
               CPU_HAS("avx512vl");
    if (!strcmp(name, "knl"))
        return CPU_HAS("avx512f") && CPU_HAS("avx512pf") && CPU_HAS("avx512er");
    if (!strcmp(name, "haswell") || !strcmp(name, "zen") || !strcmp(name, "zen2") ||
        !strcmp(name, "zen3"))
        return CPU_HAS("avx2") && CPU_HAS("fma");
    if (!strcmp(name, "sandybridge"))
        return CPU_HAS("avx");
    if (!strcmp(name, "penryn"))
        return CPU_HAS("ssse3");
    if (!strcmp(name, "excavator") || !strcmp(name, "steamroller") ||
        !strcmp(name, "piledriver") || !strcmp(name, "bulldozer"))
        return CPU_HAS("avx") && CPU_HAS("fma4");
    return 0;
}

START_TEST(test_chosen_set_runs_here)
{
    const char *user = getenv("BLIS_ARCH_TYPE");
    char name[64];
    kernel_name(name, sizeof name);
    printf("blis_kernels: %s\n", sive_mlp_blis_kernels());
    ck_assert_msg(cpu_runs(name), "kernel set '%s' needs features this CPU lacks", name);
    /* the set also really is the one BLIS runs */
    ck_assert_str_eq(name, bli_arch_string(bli_arch_query_id()));
    /* the override is gone again (unless the user set it) */
    ck_assert_int_eq(getenv("BLIS_ARCH_TYPE") != NULL, user != NULL);
    /* the reason is logged */
    ck_assert_ptr_nonnull(strstr(sive_mlp_blis_kernels(), " ("));
}
END_TEST

START_TEST(test_cpuid_agrees_with_compiler)
{
    sivei_cpu c;
    sivei_cpu_query(&c);
    ck_assert_int_eq(c.avx2_fma, CPU_HAS("avx2") && CPU_HAS("fma"));
    ck_assert_int_eq(c.avx512, CPU_HAS("avx512f") && CPU_HAS("avx512dq") &&
                                   CPU_HAS("avx512bw") && CPU_HAS("avx512vl"));
#if defined(__x86_64__) || defined(__i386__)
    ck_assert_int_eq(c.vendor == SIVEI_CPU_INTEL, __builtin_cpu_is("intel") != 0);
    ck_assert_int_eq(c.vendor == SIVEI_CPU_AMD, __builtin_cpu_is("amd") != 0);
#endif
}
END_TEST

/* The FMA timing must be decisive on this machine (two full-width units
 * give about 1, one unit about 2): a ratio in the undecided band keeps
 * BLIS's choice, which is safe but loses skx where it is the right set.
 * Load can push one measurement into the band, so one decisive ratio in
 * three is asked.  CPUs whose model answers the question (Zen 4) are not
 * timed at all. */
START_TEST(test_fma_ratio_decisive)
{
    sivei_cpu c;
    sivei_cpu_query(&c);
    if (!c.avx512 || sivei_cpu_half_width(&c))
        return;
    int decisive = 0;
    for (int i = 0; i < 3; i++) {
        double r = sivei_fma_ratio();
        printf("blis_kernels: 512-bit / 256-bit FMA time %.3f\n", r);
        decisive += !sivei_fma_undecided(r);
    }
    ck_assert_msg(decisive > 0, "three FMA time ratios within %.2f of the threshold %.2f",
                  SIVEI_FMA_BAND, SIVEI_FMA_RATIO_TWO_UNITS);
}
END_TEST

START_TEST(test_decision_table)
{
    char why[200];
    sivei_cpu avx2 = {SIVEI_CPU_INTEL, 6, 0x55, 1, 0};
    sivei_cpu avx512 = {SIVEI_CPU_INTEL, 6, 207, 1, 1};
    sivei_cpu none = {SIVEI_CPU_INTEL, 6, 0x55, 0, 0};
    sivei_cpu zen5 = {SIVEI_CPU_AMD, 0x1a, 0x44, 1, 0};
    sivei_cpu zen5_512 = {SIVEI_CPU_AMD, 0x1a, 0x44, 1, 1};
    sivei_cpu zen5_noavx2 = {SIVEI_CPU_AMD, 0x1a, 0x44, 0, 0};
    sivei_cpu zen4 = {SIVEI_CPU_AMD, 0x19, 0x11, 1, 1};
    /* without AVX-512 never skx, whatever a (meaningless) ratio says */
    ck_assert_int_eq(sivei_blis_pick(&avx2, 1.0, why, sizeof why), -1);
    ck_assert_int_eq(sivei_blis_pick(&none, 1.0, why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "no AVX2"));
#ifdef BLIS_CONFIG_SKX
    /* two full-width units: skx; one unit or not measured: BLIS's choice */
    ck_assert_int_eq(sivei_blis_pick(&avx512, 1.04, why, sizeof why), BLIS_ARCH_SKX);
    ck_assert_ptr_nonnull(strstr(why, "1.04"));
    ck_assert_int_eq(sivei_blis_pick(&zen5_512, 1.0, why, sizeof why), BLIS_ARCH_SKX);
#endif
    ck_assert_int_eq(sivei_blis_pick(&avx512, 2.0, why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "one 512-bit FMA unit"));
    ck_assert_int_eq(sivei_blis_pick(&avx512, 0.0, why, sizeof why), -1);
    /* Zen 4: 512-bit FMAs on 256-bit pipes, BLIS's zen3 stays, whatever a
     * (loaded) timing says: the model decides, not the clock */
    ck_assert_int_eq(sivei_blis_pick(&zen4, 2.0, why, sizeof why), -1);
    ck_assert_int_eq(sivei_blis_pick(&zen4, 1.0, why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "Zen 4"));
    ck_assert(sivei_cpu_half_width(&zen4) && !sivei_cpu_half_width(&zen5_512) &&
              !sivei_cpu_half_width(&avx512));
    /* an undecided ratio never gives skx */
    ck_assert_int_eq(sivei_blis_pick(&avx512, 1.4, why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "undecided"));
    ck_assert_int_eq(sivei_blis_pick(&avx512, 1.25, why, sizeof why), -1);
    ck_assert(sivei_fma_undecided(1.21) && sivei_fma_undecided(1.79) &&
              !sivei_fma_undecided(1.19) && !sivei_fma_undecided(1.81) &&
              !sivei_fma_undecided(0.0));
#ifdef BLIS_CONFIG_ZEN3
    ck_assert_int_eq(sivei_blis_pick(&zen5, 0.0, why, sizeof why), BLIS_ARCH_ZEN3);
    ck_assert_int_eq(sivei_blis_pick(&zen5_512, 2.0, why, sizeof why), BLIS_ARCH_ZEN3);
    ck_assert_int_eq(sivei_blis_pick(&zen5_512, 1.5, why, sizeof why), BLIS_ARCH_ZEN3);
    ck_assert_ptr_nonnull(strstr(why, "undecided"));
#endif
    ck_assert_int_eq(sivei_blis_pick(&zen5_noavx2, 0.0, why, sizeof why), -1);
}
END_TEST

static int forked(void)
{
    const char *f = getenv("CK_FORK");
    return !(f && !strcmp(f, "no"));
}

START_TEST(test_user_arch_type_honoured)
{
    if (!forked())
        return;
    char id[16], name[64];
    snprintf(id, sizeof id, "%d", (int)BLIS_ARCH_GENERIC); /* runs anywhere */
    setenv("BLIS_ARCH_TYPE", id, 1);
    kernel_name(name, sizeof name);
    ck_assert_str_eq(name, "generic");
    ck_assert_ptr_nonnull(strstr(sive_mlp_blis_kernels(), "set by the user"));
    ck_assert_str_eq(getenv("BLIS_ARCH_TYPE"), id);
}
END_TEST

START_TEST(test_opt_out)
{
    if (!forked() || getenv("BLIS_ARCH_TYPE"))
        return;
    setenv("SIVE_BLIS_AUTO", "0", 1);
    char name[64];
    kernel_name(name, sizeof name);
    ck_assert_ptr_nonnull(strstr(sive_mlp_blis_kernels(), "SIVE_BLIS_AUTO=0"));
    ck_assert_msg(cpu_runs(name), "BLIS's own set '%s' needs features this CPU lacks",
                  name);
    ck_assert_ptr_null(getenv("BLIS_ARCH_TYPE"));
}
END_TEST

/* n calls costing cost[setting] per row; returns how many used the slower
 * setting and, in *first_fast, the index of the first call after which
 * every call but the tries used the faster one (-1 if none). */
static long drive(sivei_adapt *a, const double cost[2], long n, long *first_fast)
{
    int fast = cost[0] < cost[1] ? 0 : 1;
    long slow = 0;
    *first_fast = -1;
    for (long i = 0; i < n; i++) {
        int set = sivei_adapt_next(a);
        slow += set != fast;
        if (set == fast && a->cur == fast && *first_fast < 0)
            *first_fast = i;
        sivei_adapt_record(a, set, cost[set]);
    }
    return slow;
}

START_TEST(test_adapt_follows_the_load)
{
    sivei_adapt a = {0};
    long first;
    /* idle: blis_threads 2x faster; the tries of one thread (each costing
     * one call's time) stay within SIVEI_TRY_COST of the run */
    const double idle[2] = {1.0, 0.5};
    long n = 4000, slow = drive(&a, idle, n, &first);
    ck_assert_int_eq(a.cur, 1);
    ck_assert_int_le(first, 2);
    ck_assert_double_le(slow * (1.0 / 0.5 - 1.0), SIVEI_TRY_COST * n + 2);
    /* another process takes a core: one thread 9x faster, found at the
     * next try (at most SIVEI_TRY_MOST calls), then kept; the tries of
     * the slow setting again cost at most SIVEI_TRY_COST */
    const double busy[2] = {1.0, 9.0};
    slow = drive(&a, busy, n, &first);
    ck_assert_int_eq(a.cur, 0);
    ck_assert_int_ge(first, 0);
    ck_assert_int_le(first, SIVEI_TRY_MOST + 1);
    long after = drive(&a, busy, n, &first);
    ck_assert_int_eq(first, 0);
    ck_assert_double_le(after * 8.0, SIVEI_TRY_COST * n + 8.0);
    /* idle again: back to blis_threads */
    slow = drive(&a, idle, n, &first);
    ck_assert_int_eq(a.cur, 1);
    ck_assert_int_le(first, SIVEI_TRY_MOST + 1);
    /* equal times: no harm either way, tries every SIVEI_TRY_FIRST calls */
    const double same[2] = {1.0, 1.0};
    drive(&a, same, 100, &first);
    ck_assert_int_le(a.wait, SIVEI_TRY_FIRST);
}
END_TEST

/* While busy() says the machine has no room for blis_threads, they are
 * neither measured nor tried; one thread is always there to go back to. */
static int fake_load;
static int fake_busy(const sivei_adapt *a)
{
    (void)a;
    return fake_load;
}

START_TEST(test_adapt_waits_for_cores)
{
    sivei_adapt a = {0};
    a.threads = 2;
    a.busy = fake_busy;
    long first;
    const double idle[2] = {1.0, 0.5}, busy[2] = {1.0, 9.0};
    fake_load = 1;
    drive(&a, idle, 1000, &first);
    ck_assert_int_eq(a.seen[1], 0);
    ck_assert_int_eq(a.cur, 0);
    fake_load = 0; /* measured at the next look, then kept */
    drive(&a, idle, SIVEI_TRY_BUSY + 2, &first);
    ck_assert_int_gt(a.seen[1], 0);
    ck_assert_int_eq(a.cur, 1);
    fake_load = 1; /* one thread is still tried, found faster, kept */
    drive(&a, busy, SIVEI_TRY_MOST + 2, &first);
    ck_assert_int_eq(a.cur, 0);
    const int tries = a.seen[1];
    drive(&a, busy, 4000, &first);
    ck_assert_int_eq(a.seen[1], tries);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("blis_kernels");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_chosen_set_runs_here);
    tcase_add_test(tc, test_cpuid_agrees_with_compiler);
    tcase_add_test(tc, test_fma_ratio_decisive);
    tcase_add_test(tc, test_decision_table);
    tcase_add_test(tc, test_user_arch_type_honoured);
    tcase_add_test(tc, test_opt_out);
    tcase_add_test(tc, test_adapt_follows_the_load);
    tcase_add_test(tc, test_adapt_waits_for_cores);
    suite_add_tcase(s, tc);
    return check_run(s);
}
