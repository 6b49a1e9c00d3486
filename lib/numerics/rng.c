/* PCG32 generator, stream derivation and ziggurat standard normals.
 *
 * pcg32 is O'Neill's PCG-XSH-RR 64/32 (LCG state, xorshift-high + random
 * rotation output).  Everything here is reentrant: the state lives in the
 * caller's sivei_pcg32 and the ziggurat tables are static const data, so no
 * initialisation and no synchronisation are needed. */
#include "rng.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define PCG_MULT UINT64_C(6364136223846793005)
/* Two LCG steps at once: s'' = s * MULT^2 + inc * (MULT + 1) (mod 2^64). */
#define PCG_MULT2 (PCG_MULT * PCG_MULT)

#if defined(__GNUC__)
#define SIVE_LIKELY(c) __builtin_expect(!!(c), 1)
#define SIVE_NOINLINE __attribute__((noinline))
#else
#define SIVE_LIKELY(c) (c)
#define SIVE_NOINLINE
#endif

static inline uint32_t pcg_output(uint64_t old)
{
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

static inline uint32_t pcg_next(sivei_pcg32 *g)
{
    uint64_t old = g->state;
    g->state = old * PCG_MULT + g->inc;
    return pcg_output(old);
}

/* Exactly two pcg_next() calls (the first in the high half), but the state
 * after both is computed from the current one with a single multiply-add,
 * so the serial dependency through the state is one LCG step per 64 bits
 * instead of two. */
static inline uint64_t pcg_next64(sivei_pcg32 *g)
{
    uint64_t old = g->state;
    uint64_t mid = old * PCG_MULT + g->inc;
    g->state = old * PCG_MULT2 + g->inc * (PCG_MULT + 1u);
    return ((uint64_t)pcg_output(old) << 32) | pcg_output(mid);
}

void sivei_pcg32_seed(sivei_pcg32 *g, uint64_t initstate, uint64_t initseq)
{
    /* Same steps as the reference pcg32_srandom_r. */
    g->state = 0u;
    g->inc = (initseq << 1) | 1u;
    (void)pcg_next(g);
    g->state += initstate;
    (void)pcg_next(g);
}

#define SPLITMIX_GAMMA UINT64_C(0x9e3779b97f4a7c15)

/* The value splitmix64 returns when its state before the call is x: the
 * state is advanced by the golden gamma and then finalised.  Advancing first
 * keeps 0 from being a fixed point (seed 0 is the default seed). */
uint64_t sivei_splitmix64(uint64_t x)
{
    uint64_t z = x + SPLITMIX_GAMMA;
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void sivei_pcg32_stream(sivei_pcg32 *g, uint64_t seed, uint64_t chain,
                       uint64_t purpose)
{
    /* Absorb the inputs one at a time into a key: for a fixed prefix each
     * stage is a bijection of the next input, and the inputs go through
     * different numbers of mixing rounds, so none play symmetric roles
     * (xoring seed and chain after mixing each alike would make (s, c) and
     * (c, s) collide).  State and increment are the next two splitmix64
     * outputs of the key, so streams differ in both (PCG streams that
     * share a state and differ only in the increment are visibly
     * correlated).  Changing this changes every stream: keep it fixed. */
    uint64_t key = sivei_splitmix64(seed);
    key = sivei_splitmix64(key ^ chain);
    key = sivei_splitmix64(key ^ purpose);
    uint64_t initstate = sivei_splitmix64(key);
    uint64_t initseq = sivei_splitmix64(key + SPLITMIX_GAMMA);
    sivei_pcg32_seed(g, initstate, initseq);
}

uint32_t sivei_pcg32_next(sivei_pcg32 *g) { return pcg_next(g); }

uint64_t sivei_pcg32_next64(sivei_pcg32 *g) { return pcg_next64(g); }

uint64_t sivei_pcg32_below(sivei_pcg32 *g, uint64_t bound)
{
    if (bound <= UINT32_MAX) {
        /* Lemire (2019): the high word of x * bound is uniform on [0, bound)
         * once the few low words below 2^32 mod bound are rejected; the
         * modulo is computed only when a rejection is possible at all. */
        uint32_t b = (uint32_t)bound;
        if (b <= 1u)
            return 0u; /* no draw consumed; bound 0 is outside the contract */
        uint64_t m = (uint64_t)pcg_next(g) * b;
        uint32_t low = (uint32_t)m;
        if (low < b) {
            uint32_t threshold = (uint32_t)(-b) % b; /* 2^32 mod b */
            while (low < threshold) {
                m = (uint64_t)pcg_next(g) * b;
                low = (uint32_t)m;
            }
        }
        return m >> 32;
    }
    if (bound == (UINT64_C(1) << 32))
        return pcg_next(g);
    /* Wide bounds (data sets beyond 2^32 examples): reject the lowest
     * 2^64 mod bound values of a 64-bit draw, then reduce.  The remaining
     * range is a whole number of copies of [0, bound), so the result is
     * exactly uniform; rejection probability is below bound / 2^64. */
    uint64_t threshold = (0u - bound) % bound;
    for (;;) {
        uint64_t r = pcg_next64(g);
        if (r >= threshold)
            return r % bound;
    }
}

double sivei_pcg32_uniform(sivei_pcg32 *g)
{
    return (double)(pcg_next64(g) >> 11) * 0x1.0p-53;
}

/* ------------------------------------------------------------------ */
/* Ziggurat normals                                                   */
/* ------------------------------------------------------------------ */

/* Marsaglia & Tsang (2000) with 256 layers of equal area v under
 * f(x) = exp(-x^2/2), x >= 0.
 *
 * Edges X[1] = r > X[2] > ... > X[255] > X[256] = 0 satisfy
 * X[i] (f(X[i+1]) - f(X[i])) = v; the base layer 0 is the rectangle
 * [0, r] x [0, f(r)] plus the tail x > r, given the pseudo-width
 * X[0] = v / f(r).  r is the root that makes the top layer close at
 * f(0) = 1 exactly, and v = r f(r) + int_r^inf f:
 *   r = 3.65415288536100877164542972039951606
 *   v = 0.00492867323397465534736177540233602211
 * The tables were generated in binary128 by the program at the end of this
 * file (bisection on r, X[i+1] = sqrt(-2 log(f(X[i]) + v / X[i])), X
 * rounded to double, then k, w and f computed from the rounded X so that
 * the tables agree with each other); test_rng re-derives and checks them.
 *
 * One 64-bit draw gives the layer i (low 8 bits) and a signed 53-bit
 * integer s (bits 11..63), so x = s X[i] / 2^52 is uniform on
 * [-X[i], X[i]).  |x| < X[i+1] lies under the curve in every layer (fast
 * path, 98.5 % of draws, tested in integers as |s| < k[i]; k is a floor,
 * so the test is conservative).  Otherwise layer 0 samples the tail
 * exactly (Marsaglia 1964) and the other layers keep x after an exact
 * comparison of a uniform height with exp(-x^2/2) (the wedge); a rejected
 * point (0.67 % of draws) restarts with a fresh draw. */

/* One object, so that the fast path addresses k and w from one base
 * register (register pressure decides whether the loop counter spills). */
static const struct {
    uint64_t k[256]; /* floor(2^52 X[i+1] / X[i]), from the double X */
    double w[256]; /* X[i] / 2^52 (exact: a power-of-two scaling) */
    double x[257]; /* X[i], i = 0 .. 256 */
    double f[257]; /* exp(-x[i]^2 / 2) of the double x[i]; f[0] unused */
} zig = {
    {
        0xef33d8025ef65u, 0xf1a5a4b331c49u, 0xf66c5f7f0302cu, 0xf89fa48a41dfbu,
        0xf9e971e014597u, 0xfac40582a2873u, 0xfb606c4005433u, 0xfbd6581c0b83au,
        0xfc32b2f1e22ecu, 0xfc7d26ecd2d22u, 0xfcba8d85e11b1u, 0xfcee204761f9eu,
        0xfd1a1a7b4c7acu, 0xfd40149e2f011u, 0xfd613adbd650bu, 0xfd7e6ef48cf03u,
        0xfd985e1b2ba75u, 0xfdaf8f82e0282u, 0xfdc46e529bf12u, 0xfdd7509c63bfcu,
        0xfde87c57efeaau, 0xfdf82b02b71aau, 0xfe068c4ee67afu, 0xfe13c82788313u,
        0xfe20003995557u, 0xfe2b5122fe4fcu, 0xfe35d35eeb19bu, 0xfe3f9bffd1e37u,
        0xfe48bd436f457u, 0xfe51470977280u, 0xfe5947338f742u, 0xfe60c9f38307eu,
        0xfe67da0b6abd8u, 0xfe6e8102aa201u, 0xfe74c751f6aa4u, 0xfe7ab488233c0u,
        0xfe804f690a93fu, 0xfe859e07ab1eau, 0xfe8aa5dc4e8e5u, 0xfe8f6bd76c5d6u,
        0xfe93f471d4728u, 0xfe9843ba947a3u, 0xfe9c5d62f563au, 0xfea044c8dd9f6u,
        0xfea3fcffd73e5u, 0xfea788d8ee326u, 0xfeaaeae992257u, 0xfeae2591a02e8u,
        0xfeb13b00b2d4bu, 0xfeb42d3ad1f9du, 0xfeb6fe1c98542u, 0xfeb9af5ee0cdbu,
        0xfebc429a0b691u, 0xfebeb948e6fd0u, 0xfec114cb4b334u, 0xfec356686c962u,
        0xfec57f50f31fdu, 0xfec790a0da978u, 0xfec98b61230c0u, 0xfecb708956eb4u,
        0xfecd4100eb7b8u, 0xfecefda07fe32u, 0xfed0a732fe643u, 0xfed23e76a2fd7u,
        0xfed3c41dea422u, 0xfed538d06adffu, 0xfed69d2b9c02au, 0xfed7f1c38a836u,
        0xfed937237e98cu, 0xfeda6dce938c9u, 0xfedb964042cf3u, 0xfedcb0ece39d3u,
        0xfeddbe422047du, 0xfedebea76216cu, 0xfedfb27e349cbu, 0xfee09a22a1446u,
        0xfee175eb83c59u, 0xfee2462ad8204u, 0xfee30b2e02ad7u, 0xfee3c53e12c4fu,
        0xfee474a0006ceu, 0xfee51994e57b5u, 0xfee5b45a32888u, 0xfee64529e007eu,
        0xfee6cc3a9bd5eu, 0xfee749bff37ffu, 0xfee7bdea7b887u, 0xfee828e7f3dfcu,
        0xfee88ae369c79u, 0xfee8e40557515u, 0xfee93473c0a39u, 0xfee97c524f2e3u,
        0xfee9bbc26af2eu, 0xfee9f2e352024u, 0xfeea21d22e4dau, 0xfeea48aa29e82u,
        0xfeea678481d24u, 0xfeea7e7897653u, 0xfeea8d9c0075eu, 0xfeea95029640fu,
        0xfeea94be8333bu, 0xfeea8ce04fa0au, 0xfeea7d76ed6f9u, 0xfeea668fc2d71u,
        0xfeea4836b42abu, 0xfeea22762ccaeu, 0xfee9f557273f4u, 0xfee9c0e13485au,
        0xfee9851a829ebu, 0xfee94207e25dau, 0xfee8f7accc851u, 0xfee8a60b66343u,
        0xfee84d2484ab2u, 0xfee7ecf7b06bau, 0xfee7858327b80u, 0xfee716c3e077au,
        0xfee6a0b5897f0u, 0xfee623528b42du, 0xfee59e9407f41u, 0xfee51271db085u,
        0xfee47ee2982f3u, 0xfee3e3db89b3cu, 0xfee34150ae4bbu, 0xfee29734b6524u,
        0xfee1e579006dfu, 0xfee12c0d95a06u, 0xfee06ae124bc4u, 0xfedfa1e0fd413u,
        0xfeded0f909980u, 0xfeddf813c8ad2u, 0xfedd171a46e52u, 0xfedc2df416652u,
        0xfedb3c8746ab3u, 0xfeda42b85b704u, 0xfed9406a42cc8u, 0xfed8357e4a981u,
        0xfed721d414fe8u, 0xfed605498c3dcu, 0xfed4dfbad586eu, 0xfed3b10242f4cu,
        0xfed278f844902u, 0xfed1377358528u, 0xfecfec47f91b7u, 0xfece97488c8b3u,
        0xfecd38454fb15u, 0xfecbcf0c427feu, 0xfeca5b6911f11u, 0xfec8dd2500cb3u,
        0xfec75406ceef4u, 0xfec5bfd29f196u, 0xfec42049dafd3u, 0xfec2752b15a14u,
        0xfec0be31ebde8u, 0xfebefb16e2e3eu, 0xfebd2b8f449cfu, 0xfebb4f4cf9d7cu,
        0xfeb965fe62013u, 0xfeb76f4e284fau, 0xfeb56ae3162b3u, 0xfeb3585fe2a4au,
        0xfeb13762fec12u, 0xfeaf07865e63cu, 0xfeacc85f3d91fu, 0xfeaa797de1cefu,
        0xfea81a6d57419u, 0xfea5aab32952cu, 0xfea329cf166a3u, 0xfea0973abe67cu,
        0xfe9df2694b6d5u, 0xfe9b3ac714865u, 0xfe986fb939aa1u, 0xfe95909d388eau,
        0xfe929cc879b1cu, 0xfe8f9387d4ef6u, 0xfe8c741f0cebbu, 0xfe893dc840864u,
        0xfe85efb35173bu, 0xfe8289053f08cu, 0xfe7f08d774243u, 0xfe7b6e37070a1u,
        0xfe77b823e9e39u, 0xfe73e5900a701u, 0xfe6ff55e5f4f2u, 0xfe6be661e11aau,
        0xfe67b75c6d578u, 0xfe6366fd91078u, 0xfe5ef3e138689u, 0xfe5a5c8e41212u,
        0xfe559f74ebc77u, 0xfe50baed29524u, 0xfe4bad34c095bu, 0xfe46746d47734u,
        0xfe410e99ead7du, 0xfe3b799d0002au, 0xfe35b33558d4bu, 0xfe2fb8fb54186u,
        0xfe29885da1b92u, 0xfe231e9db1ca9u, 0xfe1c78cbc3f98u, 0xfe1593c28b84cu,
        0xfe0e6c225a258u, 0xfe06fe4bc24f1u, 0xfdff46599ed3fu, 0xfdf7401a6b42du,
        0xfdeee708d514eu, 0xfde6364369f63u, 0xfddd288342f8fu, 0xfdd3b8118729du,
        0xfdc9debb99a7du, 0xfdbf95c5bfcd0u, 0xfdb4d5dc02e1fu, 0xfda9970105e8bu,
        0xfd9dd07a7add3u, 0xfd9178bad2c8bu, 0xfd848547b08e7u, 0xfd76ea9c8e832u,
        0xfd689c08e99ecu, 0xfd598b8920f52u, 0xfd49a9990b479u, 0xfd38e4ff0c91du,
        0xfd272a8e2f450u, 0xfd1464dd6c4e5u, 0xfd007bf1dc930u, 0xfceb54d8fec99u,
        0xfcd4d12f839c4u, 0xfcbcce902231au, 0xfca325e4bde84u, 0xfc87aa92896a4u,
        0xfc6a2977aee30u, 0xfc4a67ae25bd1u, 0xfc2821037a248u, 0xfc03060ff6c57u,
        0xfbdab9d040bedu, 0xfbaece9a1e50cu, 0xfb7ec2366fe77u, 0xfb49f8d5374c5u,
        0xfb0fb6718b90eu, 0xfacf160d354dbu, 0xfa86fde5b4bf8u, 0xfa360f581fa72u,
        0xf9da907dbf508u, 0xf9724c74dd0dau, 0xf8fa6578325ddu, 0xf86f10c6357d2u,
        0xf7cb2ec28449bu, 0xf707a755396a4u, 0xf61a5e41ba395u, 0xf4f469561255bu,
        0xf37ed61ffcb17u, 0xf19470afa44abu, 0xeef4b817ecab9u, 0xeb255e9d3f77du,
        0xe51f67ec1eeecu, 0xda354fabd8145u, 0xc08be98fbc6b6u, 0x0000000000000u,
    },
    {
        0x1.f493b7815d982p-51, 0x1.d3bb48209ad33p-51, 0x1.b981f3878fdbp-51,
        0x1.a8fdc78947759p-51, 0x1.9cbee014057aap-51, 0x1.92ee0946f4496p-51,
        0x1.8ab0fbfaa7c14p-51, 0x1.839030529f233p-51, 0x1.7d42df4d6ce8bp-51,
        0x1.7799556090672p-51, 0x1.72728f05f7a33p-51, 0x1.6db6b8d09e231p-51,
        0x1.69540be9fe5c2p-51, 0x1.653ce7b006aeap-51, 0x1.61669cf861e4bp-51,
        0x1.5dc8a243ad0fep-51, 0x1.5a5c08b718dd9p-51, 0x1.571b1a94ae41cp-51,
        0x1.54011523a7e43p-51, 0x1.5109f53e9ac42p-51, 0x1.4e3250dcd8903p-51,
        0x1.4b7739d6b5a28p-51, 0x1.48d62759c43bdp-51, 0x1.464ce44a73a16p-51,
        0x1.43d9815545e94p-51, 0x1.417a49cb9e5dbp-51, 0x1.3f2dbaa60f475p-51,
        0x1.3cf27b31704a6p-51, 0x1.3ac7570ae88fap-51, 0x1.38ab39256410ap-51,
        0x1.369d27a33a84p-51, 0x1.349c405ae12a3p-51, 0x1.32a7b5e68a4a3p-51,
        0x1.30becd256aeeep-51, 0x1.2ee0db1a978f5p-51, 0x1.2d0d43196db97p-51,
        0x1.2b437532a0a53p-51, 0x1.2982ecd770e78p-51, 0x1.27cb2faa8592ep-51,
        0x1.261bcc77658ep-51, 0x1.24745a4ac9c24p-51, 0x1.22d477a6fd3efp-51,
        0x1.213bc9d04cc82p-51, 0x1.1fa9fc2e2d901p-51, 0x1.1e1ebfbe4ae39p-51,
        0x1.1c99ca971a695p-51, 0x1.1b1ad777f2f8fp-51, 0x1.19a1a564eebadp-51,
        0x1.182df74d21262p-51, 0x1.16bf93b9deef5p-51, 0x1.1556448602e3dp-51,
        0x1.13f1d69c4096fp-51, 0x1.129219bbb5d37p-51, 0x1.1136e04207043p-51,
        0x1.0fdffefa69fb8p-51, 0x1.0e8d4cf116594p-51, 0x1.0d3ea34aa3d32p-51,
        0x1.0bf3dd1eed449p-51, 0x1.0aacd7571c0c5p-51, 0x1.0969708e8a255p-51,
        0x1.082988f632e18p-51, 0x1.06ed023a72669p-51, 0x1.05b3bf6adb37ep-51,
        0x1.047da4e3ef5c7p-51, 0x1.034a983a902abp-51, 0x1.021a8028fc947p-51,
        0x1.00ed447d3a075p-51, 0x1.ff859c118f60bp-52, 0x1.fd360d22fe785p-52,
        0x1.faebb187122bfp-52, 0x1.f8a6604899782p-52, 0x1.f665f20c90168p-52,
        0x1.f42a40fb74d6dp-52, 0x1.f1f328ac25321p-52, 0x1.efc086101eca9p-52,
        0x1.ed9237610a73ap-52, 0x1.eb681c0f76f08p-52, 0x1.e94214b2abf09p-52,
        0x1.e72002f97fe23p-52, 0x1.e501c99c1d186p-52, 0x1.e2e74c4ea46f3p-52,
        0x1.e0d06fb49d219p-52, 0x1.debd195522e34p-52, 0x1.dcad2f8fc490cp-52,
        0x1.daa0999206e6ep-52, 0x1.d8973f4d7fba4p-52, 0x1.d691096e7f123p-52,
        0x1.d48de1533c647p-52, 0x1.d28db1037ef2p-52, 0x1.d0906328b8f6ep-52,
        0x1.ce95e3068e037p-52, 0x1.cc9e1c73bd69p-52, 0x1.caa8fbd36a2abp-52,
        0x1.c8b66e0eba617p-52, 0x1.c6c6608ec8705p-52, 0x1.c4d8c136e0d1dp-52,
        0x1.c2ed7e5f07a2dp-52, 0x1.c10486cec16ap-52, 0x1.bf1dc9b81ae82p-52,
        0x1.bd3936b2ec0a2p-52, 0x1.bb56bdb85256ep-52, 0x1.b9764f1e5f73dp-52,
        0x1.b797db93f8928p-52, 0x1.b5bb541ce3d04p-52, 0x1.b3e0aa0e00c01p-52,
        0x1.b207cf09a985cp-52, 0x1.b030b4fc3a11bp-52, 0x1.ae5b4e18bb338p-52,
        0x1.ac878cd5af5cfp-52, 0x1.aab563e9ff10ap-52, 0x1.a8e4c64a0313fp-52,
        0x1.a715a724aa9a7p-52, 0x1.a547f9e0bbb8bp-52, 0x1.a37bb21a2c85ep-52,
        0x1.a1b0c39f93696p-52, 0x1.9fe7226fad24dp-52, 0x1.9e1ec2b6f7414p-52,
        0x1.9c5798cd5d92ep-52, 0x1.9a919933f99c1p-52, 0x1.98ccb892e2a33p-52,
        0x1.9708ebb70d5efp-52, 0x1.954627903a28bp-52, 0x1.9384612ef0afep-52,
        0x1.91c38dc288349p-52, 0x1.9003a2973b591p-52, 0x1.8e44951446a28p-52,
        0x1.8c865aba10c9dp-52, 0x1.8ac8e9205c044p-52, 0x1.890c35f47f72ep-52,
        0x1.875036f7a7ec7p-52, 0x1.8594e1fd1f5bep-52, 0x1.83da2ce899f16p-52,
        0x1.82200dac88677p-52, 0x1.80667a486ea1fp-52, 0x1.7ead68c73dee7p-52,
        0x1.7cf4cf3db22fcp-52, 0x1.7b3ca3c8b140ap-52, 0x1.7984dc8babd94p-52,
        0x1.77cd6faeff44ap-52, 0x1.7616535e5732p-52, 0x1.745f7dc70eeddp-52,
        0x1.72a8e516914c7p-52, 0x1.70f27f78b68ecp-52, 0x1.6f3c43161f856p-52,
        0x1.6d8626128d354p-52, 0x1.6bd01e8b343bdp-52, 0x1.6a1a22950b2b3p-52,
        0x1.6864283b13139p-52, 0x1.66ae257c99674p-52, 0x1.64f8104b7260dp-52,
        0x1.6341de8a2b0a4p-52, 0x1.618b860a31fc5p-52, 0x1.5fd4fc89f5e39p-52,
        0x1.5e1e37b2f8cd4p-52, 0x1.5c672d17d733fp-52, 0x1.5aafd23241b5ap-52,
        0x1.58f81c60e8515p-52, 0x1.574000e555f79p-52, 0x1.558774e1bb2c9p-52,
        0x1.53ce6d56a665p-52, 0x1.5214df20a8b5cp-52, 0x1.505abef5e5563p-52,
        0x1.4ea001638a606p-52, 0x1.4ce49acb311ddp-52, 0x1.4b287f602415ep-52,
        0x1.496ba32488f3p-52, 0x1.47adf9e66c338p-52, 0x1.45ef773cac75ep-52,
        0x1.44300e83c30a6p-52, 0x1.426fb2da6745fp-52, 0x1.40ae571e09e76p-52,
        0x1.3eebede725a85p-52, 0x1.3d28698561de3p-52, 0x1.3b63bbfb83d06p-52,
        0x1.399dd6fb2b267p-52, 0x1.37d6abe05586cp-52, 0x1.360e2baca52d7p-52,
        0x1.3444470265ea4p-52, 0x1.3278ee1f4b933p-52, 0x1.30ac10d6e48dap-52,
        0x1.2edd9e8cba99p-52, 0x1.2d0d862e1b855p-52, 0x1.2b3bb62b82edbp-52,
        0x1.29681c719d71dp-52, 0x1.2792a661dd381p-52, 0x1.25bb40ca96bfep-52,
        0x1.23e1d7de9c322p-52, 0x1.2206572c4c6ecp-52, 0x1.2028a9940a0a3p-52,
        0x1.1e48b93e0d431p-52, 0x1.1c666f8f82acfp-52, 0x1.1a81b51ee6d8bp-52,
        0x1.189a71a78da37p-52, 0x1.16b08bfc4202p-52, 0x1.14c3e9f8e9143p-52,
        0x1.12d4707310fc1p-52, 0x1.10e20329515f1p-52, 0x1.0eec84b16086fp-52,
        0x1.0cf3d664bcc83p-52, 0x1.0af7d84bc6116p-52, 0x1.08f869071f40fp-52,
        0x1.06f565b72a014p-52, 0x1.04eea9e16a5ffp-52, 0x1.02e40f5398f9dp-52,
        0x1.00d56e04234eep-52, 0x1.fd8537dfa2eb1p-53, 0x1.f956d9e87d7b2p-53,
        0x1.f51f654d8f68cp-53, 0x1.f0de784f0622ap-53, 0x1.ec93abdf982d2p-53,
        0x1.e83e9337a6f04p-53, 0x1.e3debb5d2ee02p-53, 0x1.df73aa9f17656p-53,
        0x1.dafce0023b8c8p-53, 0x1.d679d29e41f14p-53, 0x1.d1e9f0e80b74bp-53,
        0x1.cd4c9fe72268fp-53, 0x1.c8a13a5323b66p-53, 0x1.c3e70f9594ef8p-53,
        0x1.bf1d62abf8239p-53, 0x1.ba4368e529f4p-53, 0x1.b558487427a2fp-53,
        0x1.b05b16d136ca2p-53, 0x1.ab4ad6e101636p-53, 0x1.a62676d77cd5fp-53,
        0x1.a0eccdca4a731p-53, 0x1.9b9c98e38c54dp-53, 0x1.96347822c1efp-53,
        0x1.90b2ea94ecf9ep-53, 0x1.8b1649e7b769fp-53, 0x1.855cc53430a7dp-53,
        0x1.7f845ad46f549p-53, 0x1.798ad10b32a7ep-53, 0x1.736dad346f8adp-53,
        0x1.6d2a292000576p-53, 0x1.66bd261a37c44p-53, 0x1.60231cfd97ef1p-53,
        0x1.59580a707ce9cp-53, 0x1.52575621ad379p-53, 0x1.4b1bb363dfeadp-53,
        0x1.439ef8dff9b5ap-53, 0x1.3bd9ec1a2b134p-53, 0x1.33c3fc05791fap-53,
        0x1.2b52e3863d885p-53, 0x1.227a28f7a1afap-53, 0x1.192a69741367dp-53,
        0x1.0f5053b025d4ap-53, 0x1.04d32278ebbb4p-53, 0x1.f32482d4cd5dp-54,
        0x1.dac2f5a747281p-54, 0x1.c004d2f386207p-54, 0x1.a230c2e4cd0cbp-54,
        0x1.801fce82fa71ap-54, 0x1.57cb938443b71p-54, 0x1.250af3c2c5bc6p-54,
        0x1.b8d0be3fdf702p-55,
    },
    {
        0x1.f493b7815d982p+1, 0x1.d3bb48209ad33p+1, 0x1.b981f3878fdbp+1,
        0x1.a8fdc78947759p+1, 0x1.9cbee014057aap+1, 0x1.92ee0946f4496p+1,
        0x1.8ab0fbfaa7c14p+1, 0x1.839030529f233p+1, 0x1.7d42df4d6ce8bp+1,
        0x1.7799556090672p+1, 0x1.72728f05f7a33p+1, 0x1.6db6b8d09e231p+1,
        0x1.69540be9fe5c2p+1, 0x1.653ce7b006aeap+1, 0x1.61669cf861e4bp+1,
        0x1.5dc8a243ad0fep+1, 0x1.5a5c08b718dd9p+1, 0x1.571b1a94ae41cp+1,
        0x1.54011523a7e43p+1, 0x1.5109f53e9ac42p+1, 0x1.4e3250dcd8903p+1,
        0x1.4b7739d6b5a28p+1, 0x1.48d62759c43bdp+1, 0x1.464ce44a73a16p+1,
        0x1.43d9815545e94p+1, 0x1.417a49cb9e5dbp+1, 0x1.3f2dbaa60f475p+1,
        0x1.3cf27b31704a6p+1, 0x1.3ac7570ae88fap+1, 0x1.38ab39256410ap+1,
        0x1.369d27a33a84p+1, 0x1.349c405ae12a3p+1, 0x1.32a7b5e68a4a3p+1,
        0x1.30becd256aeeep+1, 0x1.2ee0db1a978f5p+1, 0x1.2d0d43196db97p+1,
        0x1.2b437532a0a53p+1, 0x1.2982ecd770e78p+1, 0x1.27cb2faa8592ep+1,
        0x1.261bcc77658ep+1, 0x1.24745a4ac9c24p+1, 0x1.22d477a6fd3efp+1,
        0x1.213bc9d04cc82p+1, 0x1.1fa9fc2e2d901p+1, 0x1.1e1ebfbe4ae39p+1,
        0x1.1c99ca971a695p+1, 0x1.1b1ad777f2f8fp+1, 0x1.19a1a564eebadp+1,
        0x1.182df74d21262p+1, 0x1.16bf93b9deef5p+1, 0x1.1556448602e3dp+1,
        0x1.13f1d69c4096fp+1, 0x1.129219bbb5d37p+1, 0x1.1136e04207043p+1,
        0x1.0fdffefa69fb8p+1, 0x1.0e8d4cf116594p+1, 0x1.0d3ea34aa3d32p+1,
        0x1.0bf3dd1eed449p+1, 0x1.0aacd7571c0c5p+1, 0x1.0969708e8a255p+1,
        0x1.082988f632e18p+1, 0x1.06ed023a72669p+1, 0x1.05b3bf6adb37ep+1,
        0x1.047da4e3ef5c7p+1, 0x1.034a983a902abp+1, 0x1.021a8028fc947p+1,
        0x1.00ed447d3a075p+1, 0x1.ff859c118f60bp+0, 0x1.fd360d22fe785p+0,
        0x1.faebb187122bfp+0, 0x1.f8a6604899782p+0, 0x1.f665f20c90168p+0,
        0x1.f42a40fb74d6dp+0, 0x1.f1f328ac25321p+0, 0x1.efc086101eca9p+0,
        0x1.ed9237610a73ap+0, 0x1.eb681c0f76f08p+0, 0x1.e94214b2abf09p+0,
        0x1.e72002f97fe23p+0, 0x1.e501c99c1d186p+0, 0x1.e2e74c4ea46f3p+0,
        0x1.e0d06fb49d219p+0, 0x1.debd195522e34p+0, 0x1.dcad2f8fc490cp+0,
        0x1.daa0999206e6ep+0, 0x1.d8973f4d7fba4p+0, 0x1.d691096e7f123p+0,
        0x1.d48de1533c647p+0, 0x1.d28db1037ef2p+0, 0x1.d0906328b8f6ep+0,
        0x1.ce95e3068e037p+0, 0x1.cc9e1c73bd69p+0, 0x1.caa8fbd36a2abp+0,
        0x1.c8b66e0eba617p+0, 0x1.c6c6608ec8705p+0, 0x1.c4d8c136e0d1dp+0,
        0x1.c2ed7e5f07a2dp+0, 0x1.c10486cec16ap+0, 0x1.bf1dc9b81ae82p+0,
        0x1.bd3936b2ec0a2p+0, 0x1.bb56bdb85256ep+0, 0x1.b9764f1e5f73dp+0,
        0x1.b797db93f8928p+0, 0x1.b5bb541ce3d04p+0, 0x1.b3e0aa0e00c01p+0,
        0x1.b207cf09a985cp+0, 0x1.b030b4fc3a11bp+0, 0x1.ae5b4e18bb338p+0,
        0x1.ac878cd5af5cfp+0, 0x1.aab563e9ff10ap+0, 0x1.a8e4c64a0313fp+0,
        0x1.a715a724aa9a7p+0, 0x1.a547f9e0bbb8bp+0, 0x1.a37bb21a2c85ep+0,
        0x1.a1b0c39f93696p+0, 0x1.9fe7226fad24dp+0, 0x1.9e1ec2b6f7414p+0,
        0x1.9c5798cd5d92ep+0, 0x1.9a919933f99c1p+0, 0x1.98ccb892e2a33p+0,
        0x1.9708ebb70d5efp+0, 0x1.954627903a28bp+0, 0x1.9384612ef0afep+0,
        0x1.91c38dc288349p+0, 0x1.9003a2973b591p+0, 0x1.8e44951446a28p+0,
        0x1.8c865aba10c9dp+0, 0x1.8ac8e9205c044p+0, 0x1.890c35f47f72ep+0,
        0x1.875036f7a7ec7p+0, 0x1.8594e1fd1f5bep+0, 0x1.83da2ce899f16p+0,
        0x1.82200dac88677p+0, 0x1.80667a486ea1fp+0, 0x1.7ead68c73dee7p+0,
        0x1.7cf4cf3db22fcp+0, 0x1.7b3ca3c8b140ap+0, 0x1.7984dc8babd94p+0,
        0x1.77cd6faeff44ap+0, 0x1.7616535e5732p+0, 0x1.745f7dc70eeddp+0,
        0x1.72a8e516914c7p+0, 0x1.70f27f78b68ecp+0, 0x1.6f3c43161f856p+0,
        0x1.6d8626128d354p+0, 0x1.6bd01e8b343bdp+0, 0x1.6a1a22950b2b3p+0,
        0x1.6864283b13139p+0, 0x1.66ae257c99674p+0, 0x1.64f8104b7260dp+0,
        0x1.6341de8a2b0a4p+0, 0x1.618b860a31fc5p+0, 0x1.5fd4fc89f5e39p+0,
        0x1.5e1e37b2f8cd4p+0, 0x1.5c672d17d733fp+0, 0x1.5aafd23241b5ap+0,
        0x1.58f81c60e8515p+0, 0x1.574000e555f79p+0, 0x1.558774e1bb2c9p+0,
        0x1.53ce6d56a665p+0, 0x1.5214df20a8b5cp+0, 0x1.505abef5e5563p+0,
        0x1.4ea001638a606p+0, 0x1.4ce49acb311ddp+0, 0x1.4b287f602415ep+0,
        0x1.496ba32488f3p+0, 0x1.47adf9e66c338p+0, 0x1.45ef773cac75ep+0,
        0x1.44300e83c30a6p+0, 0x1.426fb2da6745fp+0, 0x1.40ae571e09e76p+0,
        0x1.3eebede725a85p+0, 0x1.3d28698561de3p+0, 0x1.3b63bbfb83d06p+0,
        0x1.399dd6fb2b267p+0, 0x1.37d6abe05586cp+0, 0x1.360e2baca52d7p+0,
        0x1.3444470265ea4p+0, 0x1.3278ee1f4b933p+0, 0x1.30ac10d6e48dap+0,
        0x1.2edd9e8cba99p+0, 0x1.2d0d862e1b855p+0, 0x1.2b3bb62b82edbp+0,
        0x1.29681c719d71dp+0, 0x1.2792a661dd381p+0, 0x1.25bb40ca96bfep+0,
        0x1.23e1d7de9c322p+0, 0x1.2206572c4c6ecp+0, 0x1.2028a9940a0a3p+0,
        0x1.1e48b93e0d431p+0, 0x1.1c666f8f82acfp+0, 0x1.1a81b51ee6d8bp+0,
        0x1.189a71a78da37p+0, 0x1.16b08bfc4202p+0, 0x1.14c3e9f8e9143p+0,
        0x1.12d4707310fc1p+0, 0x1.10e20329515f1p+0, 0x1.0eec84b16086fp+0,
        0x1.0cf3d664bcc83p+0, 0x1.0af7d84bc6116p+0, 0x1.08f869071f40fp+0,
        0x1.06f565b72a014p+0, 0x1.04eea9e16a5ffp+0, 0x1.02e40f5398f9dp+0,
        0x1.00d56e04234eep+0, 0x1.fd8537dfa2eb1p-1, 0x1.f956d9e87d7b2p-1,
        0x1.f51f654d8f68cp-1, 0x1.f0de784f0622ap-1, 0x1.ec93abdf982d2p-1,
        0x1.e83e9337a6f04p-1, 0x1.e3debb5d2ee02p-1, 0x1.df73aa9f17656p-1,
        0x1.dafce0023b8c8p-1, 0x1.d679d29e41f14p-1, 0x1.d1e9f0e80b74bp-1,
        0x1.cd4c9fe72268fp-1, 0x1.c8a13a5323b66p-1, 0x1.c3e70f9594ef8p-1,
        0x1.bf1d62abf8239p-1, 0x1.ba4368e529f4p-1, 0x1.b558487427a2fp-1,
        0x1.b05b16d136ca2p-1, 0x1.ab4ad6e101636p-1, 0x1.a62676d77cd5fp-1,
        0x1.a0eccdca4a731p-1, 0x1.9b9c98e38c54dp-1, 0x1.96347822c1efp-1,
        0x1.90b2ea94ecf9ep-1, 0x1.8b1649e7b769fp-1, 0x1.855cc53430a7dp-1,
        0x1.7f845ad46f549p-1, 0x1.798ad10b32a7ep-1, 0x1.736dad346f8adp-1,
        0x1.6d2a292000576p-1, 0x1.66bd261a37c44p-1, 0x1.60231cfd97ef1p-1,
        0x1.59580a707ce9cp-1, 0x1.52575621ad379p-1, 0x1.4b1bb363dfeadp-1,
        0x1.439ef8dff9b5ap-1, 0x1.3bd9ec1a2b134p-1, 0x1.33c3fc05791fap-1,
        0x1.2b52e3863d885p-1, 0x1.227a28f7a1afap-1, 0x1.192a69741367dp-1,
        0x1.0f5053b025d4ap-1, 0x1.04d32278ebbb4p-1, 0x1.f32482d4cd5dp-2,
        0x1.dac2f5a747281p-2, 0x1.c004d2f386207p-2, 0x1.a230c2e4cd0cbp-2,
        0x1.801fce82fa71ap-2, 0x1.57cb938443b71p-2, 0x1.250af3c2c5bc6p-2,
        0x1.b8d0be3fdf702p-3, 0x0p+0,
    },
    {
        0x0p+0, 0x1.4a605b6b9f70dp-10, 0x1.55f9f43c1b071p-9,
        0x1.08a1f03b0b205p-8, 0x1.69ea8d90cb868p-8, 0x1.ce160f8ec6838p-8,
        0x1.1a59229952f93p-7, 0x1.4eb96421acfebp-7, 0x1.841040d8da47ep-7,
        0x1.ba48d274f8fb3p-7, 0x1.f152a4f72dd55p-7, 0x1.149033460301ap-6,
        0x1.30d388dab5e1ap-6, 0x1.4d6eaf2fbb064p-6, 0x1.6a5daf40bbf89p-6,
        0x1.879d1b600c10bp-6, 0x1.a529f4e22ebf8p-6, 0x1.c301983cd091p-6,
        0x1.e121adb828c6ap-6, 0x1.ff881d718a5b7p-6, 0x1.0f1982e96800bp-5,
        0x1.1e9059f1f6ab7p-5, 0x1.2e27ce83df492p-5, 0x1.3ddf2ce98eec4p-5,
        0x1.4db5d0e11275ep-5, 0x1.5dab23cf2adcep-5, 0x1.6dbe9b398d063p-5,
        0x1.7defb77af271dp-5, 0x1.8e3e02a68b5acp-5, 0x1.9ea90f9295563p-5,
        0x1.af30790385f71p-5, 0x1.bfd3e0f282a2cp-5, 0x1.d092efeadf161p-5,
        0x1.e16d547b25181p-5, 0x1.f262c2b6c6e36p-5, 0x1.01b979e30e498p-4,
        0x1.0a4ed2c15962p-4, 0x1.12f14d0f2179dp-4, 0x1.1ba0cbe97897cp-4,
        0x1.245d344dd0d9p-4, 0x1.2d266cf9b311p-4, 0x1.35fc5e4d93e6ap-4,
        0x1.3edef23269a81p-4, 0x1.47ce1401b2214p-4, 0x1.50c9b06fa2baep-4,
        0x1.59d1b5774669dp-4, 0x1.62e6124854d12p-4, 0x1.6c06b73694a45p-4,
        0x1.753395aaa116ep-4, 0x1.7e6ca013eefc9p-4, 0x1.87b1c9dbf2844p-4,
        0x1.9103075a4a09ep-4, 0x1.9a604dc9d5b0bp-4, 0x1.a3c9933ea6279p-4,
        0x1.ad3ece9caf626p-4, 0x1.b6bff78f2e22ap-4, 0x1.c04d0680b1008p-4,
        0x1.c9e5f493b7403p-4, 0x1.d38abb9bd91dcp-4, 0x1.dd3b56176e889p-4,
        0x1.e6f7bf29aa542p-4, 0x1.f0bff29520e12p-4, 0x1.fa93ecb6b222dp-4,
        0x1.0239d54067d2bp-3, 0x1.072f94bb8bf85p-3, 0x1.0c2b33d5209bap-3,
        0x1.112cb1da26eb9p-3, 0x1.16340e5a82d63p-3, 0x1.1b41492757d42p-3,
        0x1.2054625183c34p-3, 0x1.256d5a2835eb6p-3, 0x1.2a8c3137a071bp-3,
        0x1.2fb0e847c2a65p-3, 0x1.34db805b4ab88p-3, 0x1.3a0bfaae8d7eep-3,
        0x1.3f4258b6931aep-3, 0x1.447e9c20375d6p-3, 0x1.49c0c6cf5ce3p-3,
        0x1.4f08dade31fc6p-3, 0x1.5456da9c8683bp-3, 0x1.59aac88f31d75p-3,
        0x1.5f04a76f884p-3, 0x1.64647a2adf1a4p-3, 0x1.69ca43e21f26p-3,
        0x1.6f3607e96471ap-3, 0x1.74a7c9c7ab5a9p-3, 0x1.7a1f8d368a322p-3,
        0x1.7f9d5621f7175p-3, 0x1.852128a819a39p-3, 0x1.8aab09192815bp-3,
        0x1.903afbf74fa6ap-3, 0x1.95d105f6a7c26p-3, 0x1.9b6d2bfd2fe5bp-3,
        0x1.a10f7322d7e3cp-3, 0x1.a6b7e0b19267dp-3, 0x1.ac667a2571805p-3,
        0x1.b21b452ccd13bp-3, 0x1.b7d647a8731aap-3, 0x1.bd9787abe18a3p-3,
        0x1.c35f0b7d89d46p-3, 0x1.c92cd9971df52p-3, 0x1.cf00f8a5e6fc8p-3,
        0x1.d4db6f8b2514cp-3, 0x1.dabc455c79006p-3, 0x1.e0a381645718p-3,
        0x1.e6912b2283cd9p-3, 0x1.ec854a4c99c3fp-3, 0x1.f27fe6ce998ccp-3,
        0x1.f88108cb83231p-3, 0x1.fe88b89df93bdp-3, 0x1.024b7f6c7747ap-2,
        0x1.0555f2242e9d4p-2, 0x1.0863b8f90433p-2, 0x1.0b74d88b242d5p-2,
        0x1.0e895598709bdp-2, 0x1.11a134fcf241ep-2, 0x1.14bc7bb34ee63p-2,
        0x1.17db2ed5454e5p-2, 0x1.1afd539c2f04cp-2, 0x1.1e22ef6188113p-2,
        0x1.214c079f7cc9cp-2, 0x1.2478a1f17de87p-2, 0x1.27a8c414db11ap-2,
        0x1.2adc73e963fd9p-2, 0x1.2e13b77210763p-2, 0x1.314e94d5af62dp-2,
        0x1.348d125f9d19cp-2, 0x1.37cf368081377p-2, 0x1.3b1507cf143acp-2,
        0x1.3e5e8d08ed2d8p-2, 0x1.41abcd1357a17p-2, 0x1.44fccefc324fbp-2,
        0x1.485199fad6ad3p-2, 0x1.4baa357109ca2p-2, 0x1.4f06a8ebf6d91p-2,
        0x1.5266fc2533bebp-2, 0x1.55cb3703d00fep-2, 0x1.5933619d6eebcp-2,
        0x1.5c9f84376c242p-2, 0x1.600fa7480d2c6p-2, 0x1.6383d377be512p-2,
        0x1.66fc11a25cbep-2, 0x1.6a786ad88de1fp-2, 0x1.6df8e86124ca5p-2,
        0x1.717d93ba96148p-2, 0x1.7506769c7b1e9p-2, 0x1.78939af9252e7p-2,
        0x1.7c250aff414abp-2, 0x1.7fbad11b8d90dp-2, 0x1.8354f7faa0dd5p-2,
        0x1.86f38a8ac5ab1p-2, 0x1.8a9693fde9184p-2, 0x1.8e3e1fcb9f113p-2,
        0x1.91ea39b33cb14p-2, 0x1.959aedbe09f8fp-2, 0x1.995048418c0c4p-2,
        0x1.9d0a55e1e93ddp-2, 0x1.a0c923946843cp-2, 0x1.a48cbea20c04bp-2,
        0x1.a85534aa4d87ep-2, 0x1.ac2293a5f5a9ap-2, 0x1.aff4e9ea1854fp-2,
        0x1.b3cc462b331c7p-2, 0x1.b7a8b78071319p-2, 0x1.bb8a4d6716d8ep-2,
        0x1.bf7117c616a14p-2, 0x1.c35d26f1d2cb4p-2, 0x1.c74e8bb00d7c5p-2,
        0x1.cb45573c0a843p-2, 0x1.cf419b4ae5b69p-2, 0x1.d3436a102107bp-2,
        0x1.d74ad6426de2ep-2, 0x1.db57f320b56aap-2, 0x1.df6ad47763a02p-2,
        0x1.e3838ea5f9b7ep-2, 0x1.e7a236a4ec3cp-2, 0x1.ebc6e20bd1f5p-2,
        0x1.eff1a717e8f8ep-2, 0x1.f4229cb2f7aedp-2, 0x1.f859da7a900c4p-2,
        0x1.fc9778c7bbd9cp-2, 0x1.006dc85b8cac2p-1, 0x1.02931e18b8229p-1,
        0x1.04bbcafa63f2bp-1, 0x1.06e7dccf03c33p-1, 0x1.091761d995d7ep-1,
        0x1.0b4a68d70d9aap-1, 0x1.0d8101041429cp-1, 0x1.0fbb3a232590fp-1,
        0x1.11f9248311f34p-1, 0x1.143ad105ea997p-1, 0x1.16805128639d6p-1,
        0x1.18c9b709b3c4cp-1, 0x1.1b171573fd10ep-1, 0x1.1d687fe549966p-1,
        0x1.1fbe0a992961dp-1, 0x1.2217ca92ff7eep-1, 0x1.2475d5a90db7fp-1,
        0x1.26d84290504e8p-1, 0x1.293f28e93cd11p-1, 0x1.2baaa14d79545p-1,
        0x1.2e1ac55ea3be9p-1, 0x1.308fafd6438ebp-1, 0x1.33097c9703a32p-1,
        0x1.358848bf550e7p-1, 0x1.380c32bda00d2p-1, 0x1.3a955a662cd0bp-1,
        0x1.3d23e10af31ap-1, 0x1.3fb7e99585b7fp-1, 0x1.425198a355fep-1,
        0x1.44f114a493676p-1, 0x1.479685fdf500fp-1, 0x1.4a42172dc5276p-1,
        0x1.4cf3f4f494ebdp-1, 0x1.4fac4e820b665p-1, 0x1.526b55a656cd3p-1,
        0x1.55313f08d9e44p-1, 0x1.57fe4264c8d8cp-1, 0x1.5ad29acc85c85p-1,
        0x1.5dae86f4aff66p-1, 0x1.6092498802662p-1, 0x1.637e298550c15p-1,
        0x1.667272a92e31fp-1, 0x1.696f75e513b26p-1, 0x1.6c7589e635a86p-1,
        0x1.6f850baea7aebp-1, 0x1.729e5f43f6d0ep-1, 0x1.75c1f0770d853p-1,
        0x1.78f033ca0b0d2p-1, 0x1.7c29a779c6855p-1, 0x1.7f6ed4b20e2c8p-1,
        0x1.82c050f56cf6bp-1, 0x1.861ebfc37bca7p-1, 0x1.898ad48badefep-1,
        0x1.8d0554fe60aa4p-1, 0x1.908f1bd31714bp-1, 0x1.94291c21b7a43p-1,
        0x1.97d4657617abep-1, 0x1.9b9228d24067ep-1, 0x1.9f63bee651fd5p-1,
        0x1.a34aafdf5af0cp-1, 0x1.a748bd550c9dep-1, 0x1.ab5fef17a2501p-1,
        0x1.af92a3f6ce89fp-1, 0x1.b3e3a8234dd0dp-1, 0x1.b85653a8ff54fp-1,
        0x1.bceeb4ee1dc7fp-1, 0x1.c1b1cd9eebae7p-1, 0x1.c6a5ecea9787cp-1,
        0x1.cbd33a8a72de8p-1, 0x1.d144978a119d9p-1, 0x1.d70920657bcefp-1,
        0x1.dd36fa704de93p-1, 0x1.e3f11e027f074p-1, 0x1.eb7545b6ca913p-1,
        0x1.f446ac979f084p-1, 0x1p+0,
    },
};
#define ZIG_R 0x1.d3bb48209ad33p+1 /* 3.6541528853610088 */

/* Tables are hidden (not static) only so that test_rng can verify them. */
SIVE_HIDDEN extern const uint64_t *const sive_zig_k_table;
SIVE_HIDDEN extern const double *const sive_zig_x_table;
SIVE_HIDDEN extern const double *const sive_zig_w_table;
SIVE_HIDDEN extern const double *const sive_zig_f_table;
const uint64_t *const sive_zig_k_table = zig.k;
const double *const sive_zig_x_table = zig.x;
const double *const sive_zig_w_table = zig.w;
const double *const sive_zig_f_table = zig.f;

/* Rare path: |x| = |s| X[i] / 2^52 >= X[i+1].  Returns 1 and stores the
 * variate in *out when accepted, 0 when the caller must draw again. */
static SIVE_NOINLINE int zig_slow(sivei_pcg32 *g, unsigned i, double x,
                                  double *out)
{
    /* s = -2^52 (x = -X[i] exactly, w being X / 2^52) has no mirror image
     * in the lattice: drop it so that the law is exactly symmetric. */
    if (x == -zig.x[i])
        return 0;
    if (i == 0) {
        /* Tail beyond r: with a = -log(U1)/r, b = -log(U2), accept r + a
         * when 2b > a^2; 1 - uniform lies in (0, 1], so log is finite. */
        double a, b;
        do {
            a = -log(1.0 - sivei_pcg32_uniform(g)) * (1.0 / ZIG_R);
            b = -log(1.0 - sivei_pcg32_uniform(g));
        } while (b + b <= a * a);
        *out = signbit(x) ? -(ZIG_R + a) : ZIG_R + a;
        return 1;
    }
    /* Wedge: uniform height in [f(X[i]), f(X[i+1])) against the density. */
    double y = zig.f[i] + sivei_pcg32_uniform(g) * (zig.f[i + 1] - zig.f[i]);
    if (y < exp(-0.5 * x * x)) {
        *out = x;
        return 1;
    }
    return 0;
}

static inline double zig_normal(sivei_pcg32 *g)
{
    /* u = one 64-bit draw: layer i from the low 8 bits, s = the signed
     * 53-bit integer in bits 11..63, so x = s X[i] / 2^52 is uniform on
     * [-X[i], X[i]).  The fast test |s| < k[i] is integer-only and short:
     * the loop is throughput-bound, so the cost of the ~1.5 % mispredicted
     * exits grows with how late the branch resolves.  The lone unmatched
     * value s = -2^52 always reaches the slow path and is dropped there. */
    for (;;) {
        uint64_t u = pcg_next64(g);
        size_t i = (size_t)(u & 0xffu);
        int64_t s = (int64_t)u >> 11;
        uint64_t a = s < 0 ? 0u - (uint64_t)s : (uint64_t)s;
        double x = (double)s * zig.w[i];
        if (SIVE_LIKELY(a < zig.k[i]))
            return x;
        /* The slow path gets a copy so that g's state never has its address
         * taken inside the bulk loops (it stays in registers there). */
        sivei_pcg32 t = *g;
        double out;
        int ok = zig_slow(&t, (unsigned)i, x, &out);
        *g = t;
        if (ok)
            return out;
    }
}

double sivei_pcg32_normal(sivei_pcg32 *g) { return zig_normal(g); }

/* ------------------------------------------------------------------ */
/* Bulk normals: the same sequence, eight draws at a time             */
/* ------------------------------------------------------------------ */

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define SIVE_RNG_AVX512 1

/* One 64-bit draw is two LCG steps: s' = A s + c with A = MULT^2 and
 * c = inc (MULT + 1).  After j draws: s_j = A^j s + c S_j with
 * S_j = 1 + A + ... + A^(j-1).  JUMP_A[j] = A^j, JUMP_S[j] = S_j (mod 2^64),
 * j = 0 .. 8 (printed by a three-line Python loop; the bulk-vs-scalar test
 * of test_rng would catch any wrong digit). */
static const uint64_t JUMP_A[9] = {
    UINT64_C(0x0000000000000001), UINT64_C(0x685f98a2018fade9),
    UINT64_C(0xfb4d3ae39272be11), UINT64_C(0xf08d02b0115f7a79),
    UINT64_C(0xb59dda5f38413d21), UINT64_C(0xc07a0e3e901ef009),
    UINT64_C(0x2baa1c4032658d31), UINT64_C(0x384115c58e369e99),
    UINT64_C(0x8d5e2ddc895abe41)};
static const uint64_t JUMP_S[9] = {
    UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000001),
    UINT64_C(0x685f98a2018fadea), UINT64_C(0x63acd38594026bfb),
    UINT64_C(0x5439d635a561e674), UINT64_C(0x09d7b094dda32395),
    UINT64_C(0xca51bed36dc2139e), UINT64_C(0xf5fbdb13a027a0cf),
    UINT64_C(0x2e3cf0d92e5e3f68)};

/* pcg_output() of each lane's state, in the low 32 bits of the lane (the
 * high dword is rotated by 0 and dropped by the caller). */
__attribute__((target("avx512f,avx512dq"))) static inline __m512i output8(__m512i x)
{
    __m512i t = _mm512_srli_epi64(_mm512_xor_si512(_mm512_srli_epi64(x, 18), x), 27);
    return _mm512_rorv_epi32(t, _mm512_srli_epi64(x, 59));
}

/* zig_normal() n times, eight draws at a time: lane j of a vector holds
 * the state after j draws (a jump), so the vector computes the next eight
 * draws and their fast-path test at once.  The lanes before the first
 * that fails the fast test are stored; that draw then takes the scalar
 * slow path from the state just after it, which draws what it needs, and
 * the next vector starts from where the slow path stopped.  So the output
 * and the final state are exactly those of the scalar loop. */
static inline __attribute__((always_inline, target("avx512f,avx512dq"))) void
zig_bulk(sivei_pcg32 *g, void *out, size_t n, int f32)
{
    uint64_t s = g->state;
    const uint64_t inc = g->inc, c = inc * (PCG_MULT + 1u);
    const __m512i ja = _mm512_loadu_si512((const void *)JUMP_A);
    const __m512i js = _mm512_loadu_si512((const void *)JUMP_S);
    const __m512i a8 = _mm512_set1_epi64((long long)JUMP_A[8]);
    const __m512i c8 = _mm512_set1_epi64((long long)(c * JUMP_S[8]));
    const __m512i mult = _mm512_set1_epi64((long long)PCG_MULT);
    const __m512i vinc = _mm512_set1_epi64((long long)inc);
    const __m512i lo32 = _mm512_set1_epi64(0xffffffffLL);
    const __m512i lay = _mm512_set1_epi64(0xff);
    size_t k = 0;
    while (k < n) {
        __m512i st = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_set1_epi64((long long)s), ja),
                                      _mm512_mullo_epi64(_mm512_set1_epi64((long long)c), js));
        for (;;) {
            __m512i mid = _mm512_add_epi64(_mm512_mullo_epi64(st, mult), vinc);
            __m512i u = _mm512_or_si512(_mm512_slli_epi64(output8(st), 32),
                                        _mm512_and_si512(output8(mid), lo32));
            __m512i i = _mm512_and_si512(u, lay);
            __m512i sv = _mm512_srai_epi64(u, 11);
            __m512i kk = _mm512_i64gather_epi64(i, (const void *)zig.k, 8);
            __m512d ww = _mm512_i64gather_pd(i, (const void *)zig.w, 8);
            __m512d x = _mm512_mul_pd(_mm512_cvtepi64_pd(sv), ww);
            unsigned ok = _mm512_cmplt_epu64_mask(_mm512_abs_epi64(sv), kk);
            size_t rem = n - k;
            if (SIVE_LIKELY(ok == 0xffu && rem >= 8)) {
                if (f32)
                    _mm256_storeu_ps((float *)out + k, _mm512_cvtpd_ps(x));
                else
                    _mm512_storeu_pd((double *)out + k, x);
                k += 8;
                s = JUMP_A[8] * s + c * JUMP_S[8];
                st = _mm512_add_epi64(_mm512_mullo_epi64(st, a8), c8);
                continue;
            }
            /* lanes before the first failure, up to what is still needed */
            unsigned bad = ok == 0xffu ? 8u : (unsigned)__builtin_ctz(~ok);
            size_t take = bad < rem ? bad : rem;
            double xs[8];
            uint64_t us[8];
            _mm512_storeu_pd(xs, x);
            _mm512_storeu_si512((void *)us, u);
            for (size_t j = 0; j < take; j++) {
                if (f32)
                    ((float *)out)[k + j] = (float)xs[j];
                else
                    ((double *)out)[k + j] = xs[j];
            }
            k += take;
            if (k == n) {
                s = JUMP_A[take] * s + c * JUMP_S[take];
                break;
            }
            /* draw `bad` takes the slow path */
            sivei_pcg32 t = {JUMP_A[bad + 1] * s + c * JUMP_S[bad + 1], inc};
            double v;
            if (zig_slow(&t, (unsigned)(us[bad] & 0xffu), xs[bad], &v)) {
                if (f32)
                    ((float *)out)[k++] = (float)v;
                else
                    ((double *)out)[k++] = v;
            }
            s = t.state;
            break;
        }
    }
    g->state = s;
}

__attribute__((target("avx512f,avx512dq"))) static void normals_avx512(sivei_pcg32 *g,
                                                                     double *out, size_t n)
{
    zig_bulk(g, out, n, 0);
}

__attribute__((target("avx512f,avx512dq"))) static void
normals_f32_avx512(sivei_pcg32 *g, float *out, size_t n)
{
    zig_bulk(g, out, n, 1);
}

static int rng_have_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
}
#else
#define SIVE_RNG_AVX512 0
#endif

void sivei_pcg32_normals(sivei_pcg32 *g, double *out, size_t n)
{
#if SIVE_RNG_AVX512
    if (n >= 8 && rng_have_avx512()) {
        normals_avx512(g, out, n);
        return;
    }
#endif
    /* Work on a local copy so the state stays in registers. */
    sivei_pcg32 s = *g;
    for (size_t k = 0; k < n; k++)
        out[k] = zig_normal(&s);
    *g = s;
}

void sivei_pcg32_normals_f32(sivei_pcg32 *g, float *out, size_t n)
{
#if SIVE_RNG_AVX512
    if (n >= 8 && rng_have_avx512()) {
        normals_f32_avx512(g, out, n);
        return;
    }
#endif
    sivei_pcg32 s = *g;
    for (size_t k = 0; k < n; k++)
        out[k] = (float)zig_normal(&s);
    *g = s;
}

/* Generator of the ziggurat tables above (gcc, libquadmath):
 *   gcc -O2 gen.c -lquadmath -lm && ./a.out
 * prints the initialiser of `zig` (k, w, x, f).

#include <math.h>
#include <quadmath.h>
#include <stdio.h>
typedef __float128 Q;
static Q f(Q x) { return expq(-x * x / 2); }
static Q X[257], v;
static Q build(Q r)
{
    v = r * f(r) + sqrtq(M_PIq / 2) * erfcq(r / M_SQRT2q);
    X[1] = r;
    for (int i = 1; i < 255; i++) {
        Q y = f(X[i]) + v / X[i];
        if (y >= 1)
            return 1;
        X[i + 1] = sqrtq(-2 * logq(y));
    }
    return f(X[255]) + v / X[255] - 1;
}
static void put(int i, int n, int per, const char *text)
{
    printf("%s%s,%s", i % per ? " " : "        ", text,
           i % per == per - 1 || i == n - 1 ? "\n" : "");
}
int main(void)
{
    Q lo = 3.5Q, hi = 3.8Q;
    for (int it = 0; it < 300; it++) {
        Q mid = (lo + hi) / 2;
        if (build(mid) > 0) lo = mid; else hi = mid;
    }
    build(hi);
    X[0] = v / f(hi);
    X[256] = 0;
    double x[257];
    for (int i = 0; i <= 256; i++)
        x[i] = (double)X[i];
    char t[64];
    printf("    {\n");
    for (int i = 0; i < 256; i++) {
        Q k = i < 255 ? floorq(ldexpq((Q)x[i + 1], 52) / (Q)x[i]) : 0;
        snprintf(t, sizeof t, "0x%013llxu", (unsigned long long)k);
        put(i, 256, 4, t);
    }
    printf("    },\n    {\n");
    for (int i = 0; i < 256; i++) {
        snprintf(t, sizeof t, "%a", ldexp(x[i], -52));
        put(i, 256, 3, t);
    }
    printf("    },\n    {\n");
    for (int i = 0; i <= 256; i++) {
        snprintf(t, sizeof t, "%a", x[i]);
        put(i, 257, 3, t);
    }
    printf("    },\n    {\n");
    for (int i = 0; i <= 256; i++) {
        snprintf(t, sizeof t, "%a", i ? (double)f((Q)x[i]) : 0.0);
        put(i, 257, 3, t);
    }
    printf("    },\n");
    return 0;
}
*/
