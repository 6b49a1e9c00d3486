/* The BLIS kernel choice (lib/ref/blis_kernels.c): the CPU facts it rests on
 * and the decision table, exposed to the tests (not installed). */
#ifndef SIVE_BLIS_KERNELS_H
#define SIVE_BLIS_KERNELS_H

#include "internal.h"

#include <stddef.h>

enum { SIVEI_CPU_OTHER = 0, SIVEI_CPU_INTEL = 1, SIVEI_CPU_AMD = 2 };

/* What CPUID (and XCR0, the register state the OS saves) says. */
typedef struct sivei_cpu {
    int vendor;      /* SIVEI_CPU_* */
    unsigned family; /* with the extended family added, as AMD counts it */
    unsigned model;  /* with the extended model for families 6 and 15 */
    int avx2_fma;    /* AVX, AVX2 and FMA3 usable (YMM state enabled) */
    int avx512;      /* also AVX-512 F, DQ, BW and VL usable (ZMM state) */
} sivei_cpu;

/* Below this ratio of 512-bit to 256-bit FMA burst time the CPU has two
 * full-width 512-bit FMA units (1.0 expected; one unit gives 2.0). */
#define SIVEI_FMA_RATIO_TWO_UNITS 1.5
/* Ratios within this of the threshold decide nothing: they are measured
 * again, up to SIVEI_FMA_BLOCKS blocks, and if still there BLIS's choice
 * (not skx) stands. */
#define SIVEI_FMA_BAND 0.3
#define SIVEI_FMA_BLOCKS 32

/* 1 when ratio lies in the undecided band. */
SIVE_HIDDEN int sivei_fma_undecided(double ratio);

/* 1 when the CPU model alone says its 512-bit FMAs run on 256-bit
 * datapaths (AMD family 0x19, Zen 4), so no timing is needed: the
 * timing is the one input of the choice that load can move. */
SIVE_HIDDEN int sivei_cpu_half_width(const sivei_cpu *c);

/* Fill c from CPUID on this machine (all zero off x86). */
SIVE_HIDDEN void sivei_cpu_query(sivei_cpu *c);

/* Best time of bursts of 512-bit FMAs over that of as many 256-bit ones
 * (about 1.5 ms); call only when c.avx512 is set.  0 off x86. */
SIVE_HIDDEN double sivei_fma_ratio(void);

/* The BLIS arch_t id libsive forces on CPU c, or -1 to keep BLIS's own
 * choice.  ratio: measured 512-bit / 256-bit FMA time (0 = not measured).
 * Writes the reason, either way, to why (len bytes). */
SIVE_HIDDEN int sivei_blis_pick(const sivei_cpu *c, double ratio, char *why, size_t len);

#endif
