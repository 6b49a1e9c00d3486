/* The option text setter (sive_probe_set_text) on hostile text, against a
 * reference written from its documentation in include/sive/sive.h, not
 * from lib/core/options.c.
 *
 * Input: a byte choosing the option (its index in sive_option_at(), modulo
 * the table's length), then the value's text (up to its first NUL).
 *
 * Reference: the grammar of the header, [+-] digits with, for doubles, an
 * optional '.' with digits on either side or both (one digit at least) and
 * an optional exponent (e|E [+-] digits); int options the sign and digits
 * only; the special words "auto" (metropolis, kron_every,
 * radius_lookahead, radius_check: -1; c_h: 0) and "nan" (anchor), any case.  The seed
 * (a uint64_t) takes every 64-bit value: -2^63 .. 2^64 - 1, a value above
 * 2^63 - 1 read back as its bits (negative).
 *
 * Oracle, both ways: an accepted value is in the reference grammar, inside
 * the option's bounds, and reads back as the reference's value (strtoll;
 * strtod in the "C" locale, bit for bit); a value the reference reads as a
 * finite, normal (or zero) number inside the bounds is accepted; a refused
 * value gives SIVE_E_INVALID_ARG, a message, and leaves the option as it
 * was. */
#define SIVE_EXPERIMENTAL /* kron_every, radius_lookahead, radius_check take "auto" */
#include "fuzz_common.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <sive/sive.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1: sign and digits; 2: another form of the grammar; 0: outside it. */
static int ref_form(const char *s)
{
    size_t i = s[0] == '+' || s[0] == '-', lead = 0, frac = 0;
    while (isdigit((unsigned char)s[i]))
        i++, lead++;
    int form = 1;
    if (s[i] == '.') {
        form = 2;
        for (i++; isdigit((unsigned char)s[i]); i++)
            frac++;
    }
    if (lead + frac == 0)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        form = 2;
        i += 1 + (s[i + 1] == '+' || s[i + 1] == '-');
        size_t e = 0;
        while (isdigit((unsigned char)s[i]))
            i++, e++;
        if (!e)
            return 0;
    }
    return s[i] ? 0 : form;
}

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

static int in_bounds_i(const sive_option_info *in, int64_t v)
{
    return (in->lo_open ? v > in->int_lo : v >= in->int_lo) &&
           (in->hi_open ? v < in->int_hi : v <= in->int_hi);
}

static int in_bounds_d(const sive_option_info *in, double v)
{
    return (in->lo_open ? v > in->double_lo : v >= in->double_lo) &&
           (in->hi_open ? v < in->double_hi : v <= in->double_hi);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The option's value as the probe holds it. */
static void get(sive_probe *p, const sive_option_info *in, int64_t *iv, double *dv)
{
    *iv = 0;
    *dv = 0.0;
    if (in->type == SIVE_TYPE_INT)
        ORACLE(sive_probe_get_int(p, in->id, iv) == SIVE_OK, "get %s", in->name);
    else
        ORACLE(sive_probe_get_double(p, in->id, dv) == SIVE_OK, "get %s", in->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static size_t count;
    static locale_t c_loc;
    if (!count) {
        while (sive_option_at(count))
            count++;
        c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        ORACLE(c_loc != (locale_t)0, "no C locale");
    }
    if (size < 1 || size > 512)
        return 0;
    const sive_option_info *in = sive_option_at(data[0] % count);
    char text[512];
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    sive_probe *p = NULL;
    ORACLE(sive_probe_new(&p) == SIVE_OK, "sive_probe_new");
    int64_t i0, i1;
    double d0, d1;
    get(p, in, &i0, &d0);
    const int rc = sive_probe_set_text(p, in->name, text);
    ORACLE(rc == SIVE_OK || rc == SIVE_E_INVALID_ARG, "%s '%s': status %d", in->name, text, rc);
    get(p, in, &i1, &d1);
    const int form = ref_form(text);
    const int auto_int = in->id == SIVE_OPT_METROPOLIS || in->id == SIVE_OPT_KRON_EVERY ||
                         in->id == SIVE_OPT_RADIUS_LOOKAHEAD || in->id == SIVE_OPT_RADIUS_CHECK;
    const int special = (auto_int && ieq(text, "auto")) ||
                        (in->id == SIVE_OPT_C_H && ieq(text, "auto")) ||
                        (in->id == SIVE_OPT_ANCHOR && ieq(text, "nan"));
    if (rc != SIVE_OK) {
        ORACLE(*sive_probe_errmsg(p), "%s '%s': refused without a message", in->name, text);
        ORACLE(i0 == i1 && same_bits(d0, d1), "%s '%s': refused but changed", in->name, text);
    }
    if (special) {
        ORACLE(rc == SIVE_OK, "%s '%s': the special word refused", in->name, text);
        ORACLE(auto_int ? i1 == -1
               : in->id == SIVE_OPT_C_H      ? d1 == 0.0
                                             : isnan(d1),
               "%s '%s': read back %lld %g", in->name, text, (long long)i1, d1);
    } else if (in->type == SIVE_TYPE_INT) {
        errno = 0;
        long long v = form == 1 ? strtoll(text, NULL, 10) : 0;
        int ok = form == 1 && errno != ERANGE && in_bounds_i(in, v);
        if (in->id == SIVE_OPT_SEED && form == 1 && !ok && text[0] != '-') {
            errno = 0; /* above 2^63 - 1: the uint64's bits */
            const uint64_t u = strtoull(text, NULL, 10);
            ok = errno != ERANGE;
            memcpy(&v, &u, sizeof v);
        }
        ORACLE((rc == SIVE_OK) == ok, "%s '%s': status %d, reference %s", in->name, text, rc,
               ok ? "accepts" : "refuses");
        if (ok)
            ORACLE(i1 == v, "%s '%s': read back %lld", in->name, text, (long long)i1);
    } else {
        locale_t old = uselocale(c_loc);
        errno = 0;
        const double v = form ? strtod(text, NULL) : NAN;
        const int range = errno == ERANGE;
        uselocale(old);
        const int fine = form && !range && isfinite(v) && (v == 0.0 || fabs(v) >= DBL_MIN);
        if (rc == SIVE_OK) {
            ORACLE(form && isfinite(v) && in_bounds_d(in, v), "%s '%s': accepted", in->name, text);
            ORACLE(same_bits(d1, v), "%s '%s': read back %.17g, reference %.17g", in->name, text,
                   d1, v);
        } else {
            ORACLE(!(fine && in_bounds_d(in, v)), "%s '%s' (%.17g): refused: %s", in->name, text, v,
                   sive_probe_errmsg(p));
        }
    }
    sive_probe_free(p);
    return 0;
}
