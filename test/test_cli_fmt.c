/* The `sive` program's number rounding, display widths and tables
 * (tools/fmt.c, compiled in). */
#include "fmt.h"

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *pm(double v, double u)
{
    static char buf[128];
    return cli_round_pm(buf, sizeof buf, v, u, 1);
}

static const char *num(double v, double u)
{
    static char buf[128];
    return cli_round_pm(buf, sizeof buf, v, u, 0);
}

START_TEST(round_examples)
{
    /* the examples */
    ck_assert_str_eq(pm(4519.1528, 10.2084), "4519 ± 10");
    ck_assert_str_eq(pm(11560589.9383, 668149.9662), "11560000 ± 670000");
    ck_assert_str_eq(pm(0.5518, 0.0483), "0.552 ± 0.048");
    ck_assert_str_eq(pm(4213.5206, 196.5215), "4210 ± 200");
    ck_assert_str_eq(pm(192.2589, 21.0920), "192 ± 21");
    ck_assert_str_eq(pm(1.0, 0.15), "1.00 ± 0.15");
    /* negative values, and the value smaller than its uncertainty */
    ck_assert_str_eq(pm(-3.14159, 0.0123), "-3.142 ± 0.012");
    ck_assert_str_eq(pm(0.3, 120.0), "0 ± 120");
    ck_assert_str_eq(pm(-0.0004, 0.25), "0.00 ± 0.25"); /* never "-0.00" */
}
END_TEST

START_TEST(round_carries)
{
    /* the uncertainty rounds up into the next decade: 9.96 -> 10 */
    ck_assert_str_eq(pm(123.456, 9.96), "123 ± 10");
    ck_assert_str_eq(pm(123.456, 0.0996), "123.46 ± 0.10");
    ck_assert_str_eq(pm(4.0, 99.5), "0 ± 100");
    ck_assert_str_eq(pm(5.0, 99.5), "10 ± 100"); /* halves round away from 0 */
    /* exact powers of ten */
    ck_assert_str_eq(pm(2.5, 1.0), "2.5 ± 1.0");
    ck_assert_str_eq(pm(2500.0, 1000.0), "2500 ± 1000");
    ck_assert_str_eq(pm(0.25, 0.1), "0.25 ± 0.10");
}
END_TEST

START_TEST(round_value_only)
{
    ck_assert_str_eq(num(4519.1528, 10.2084), "4519");
    ck_assert_str_eq(num(1675409.38, 1675409.38), "1700000"); /* an MCSE to 2 digits */
    ck_assert_str_eq(num(0.01858, 0.01858), "0.019");
}
END_TEST

START_TEST(round_without_uncertainty)
{
    /* NaN: 4 significant digits, no "±" */
    ck_assert_str_eq(pm(4519.1528, NAN), "4519");
    ck_assert_str_eq(pm(0.55154, NAN), "0.5515");
    ck_assert_str_eq(pm(99996.0, NAN), "100000");
    ck_assert_str_eq(pm(0.0, NAN), "0");
    ck_assert_str_eq(pm(12.0, INFINITY), "12.00");
    /* u = 0: the same digits, "± 0" */
    ck_assert_str_eq(pm(2.0, 0.0), "2.000 ± 0");
    ck_assert_str_eq(num(2.0, 0.0), "2.000");
    /* non-finite values */
    ck_assert_str_eq(pm(NAN, 1.0), "nan");
    ck_assert_str_eq(pm(INFINITY, 1.0), "inf");
    ck_assert_str_eq(pm(-INFINITY, NAN), "-inf");
}
END_TEST

START_TEST(round_extremes)
{
    ck_assert_str_eq(pm(1.234e-12, 4.5e-14), "(1.234 ± 0.045)e-12");
    ck_assert_str_eq(pm(1.234e17, 5.6e15), "(1.234 ± 0.056)e17");
    ck_assert_str_eq(num(1.234e17, 5.6e15), "1.234e17");
    ck_assert_str_eq(pm(1.5e-7, 2.5e-8), "0.000000150 ± 0.000000025");
    ck_assert_str_eq(pm(1.5e-9, 2.5e-10), "(1.50 ± 0.25)e-9");
    char small[8];
    cli_round_pm(small, sizeof small, 4519.1528, 10.2084, 1);
    ck_assert_str_eq(small, "4519 ±"); /* truncated, terminated */
}
END_TEST

START_TEST(widths)
{
    ck_assert_uint_eq(cli_width(""), 0);
    ck_assert_uint_eq(cli_width("abc"), 3);
    ck_assert_uint_eq(cli_width("±"), 1);
    ck_assert_uint_eq(cli_width("λ̂"), 1);                /* λ + combining circumflex */
    ck_assert_uint_eq(cli_width("t²σ²/N"), 6);
    ck_assert_uint_eq(cli_width("4519 ± 10"), 9);
    ck_assert_uint_eq(cli_width("R̂ ESS L̄"), 7);
}
END_TEST

/* f's contents as a string (freed by the caller). */
static char *slurp(FILE *f)
{
    long n = ftell(f);
    char *s = calloc((size_t)n + 1, 1);
    rewind(f);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
    return s;
}

START_TEST(cells_pad_by_display_width)
{
    FILE *f = tmpfile();
    cli_cell(f, "λ̂ ± σ", 8);
    fputc('|', f);
    cli_cell(f, "±1", -4);
    fputc('|', f);
    char *s = slurp(f);
    ck_assert_str_eq(s, "λ̂ ± σ   |  ±1|");
    free(s);
    fclose(f);
}
END_TEST

START_TEST(table_aligns_utf8)
{
    static const char *const head[] = {"", "λ̂", "ESS"};
    static const int right[] = {0, 0, 1};
    cli_table t;
    cli_table_init(&t, 3, head, right);
    cli_table_row(&t);
    cli_table_set(&t, 0, "!");
    cli_table_set(&t, 1, "%s", "4519 ± 10");
    cli_table_set(&t, 2, "%d", 23);
    cli_table_row(&t);
    cli_table_set(&t, 1, "0.55 ± 0.05");
    FILE *f = tmpfile();
    cli_table_print(f, &t, "> ");
    char *s = slurp(f);
    ck_assert_str_eq(s, ">    λ̂            ESS\n"
                        "> !  4519 ± 10     23\n"
                        ">    0.55 ± 0.05\n");
    free(s);
    fclose(f);
    cli_table_free(&t);
}
END_TEST

/* A slow run's rate keeps its digits (0.04 steps/s printed "0"). */
START_TEST(rate_keeps_digits)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.*f", cli_rate_decimals(0.0437), 0.0437);
    ck_assert_str_eq(buf, "0.044");
    snprintf(buf, sizeof buf, "%.*f", cli_rate_decimals(7.25), 7.25);
    ck_assert_str_eq(buf, "7.2");
    snprintf(buf, sizeof buf, "%.*f", cli_rate_decimals(506.4), 506.4);
    ck_assert_str_eq(buf, "506");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_fmt");
    TCase *tc = tcase_create("fmt");
    tcase_add_test(tc, round_examples);
    tcase_add_test(tc, round_carries);
    tcase_add_test(tc, round_value_only);
    tcase_add_test(tc, round_without_uncertainty);
    tcase_add_test(tc, round_extremes);
    tcase_add_test(tc, widths);
    tcase_add_test(tc, cells_pad_by_display_width);
    tcase_add_test(tc, table_aligns_utf8);
    tcase_add_test(tc, rate_keeps_digits);
    suite_add_tcase(s, tc);
    return check_run(s);
}
