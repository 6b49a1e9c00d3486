/* Text formatting of the `sive` program that needs nothing but libc and
 * libm (unit-tested on its own by test/test_cli_fmt.c): numbers rounded to
 * their uncertainty, display widths of UTF-8 text, and aligned tables. */
#ifndef SIVE_TOOLS_FMT_H
#define SIVE_TOOLS_FMT_H

#include <stddef.h>
#include <stdio.h>

/* v rounded to its uncertainty u: u to 2 significant digits and v to the
 * same decimal place, "v ± u" (show_u 1) or "v" alone (show_u 0):
 *   4519.1528, 10.2084      -> "4519 ± 10"
 *   11560589.9, 668149.97   -> "11560000 ± 670000"
 *   0.5518, 0.0483          -> "0.552 ± 0.048"
 * Ties go by the binary value (0.5515 is 0.55149999...: "0.551").
 * Places beyond 10^-9 or magnitudes from 10^15 switch to a shared exponent,
 * "(1.23 ± 0.45)e-12".  Without a usable u (NaN or infinite) v gets 4
 * significant digits and no "± u"; u = 0 gives those digits and "± 0".
 * NaN and infinite v print as "nan", "inf", "-inf".  Never "-0".  Returns
 * buf (truncated to len). */
char *cli_round_pm(char *buf, size_t len, double v, double u, int show_u);

/* Decimals for a rate printed with "%.*f": 0 from 100 up, 1 from 1, else 3
 * (a slow run's 0.04 steps/s read "0"). */
int cli_rate_decimals(double rate);

/* Terminal columns of UTF-8 text: one per character, none for combining
 * marks (U+0300..U+036F, as in "λ̂"). */
size_t cli_width(const char *s);
/* s padded with spaces to width display columns: left-aligned for
 * width > 0, right-aligned for width < 0; longer text is not cut. */
void cli_cell(FILE *f, const char *s, int width);

/* A table of text cells whose columns are as wide as their widest cell
 * (by display width), for the tables on stdout.  Rows are added one at a
 * time; a cell never set prints empty (also after running out of memory,
 * which is otherwise ignored: a table is output, not data). */
typedef struct cli_table {
    int ncols;
    size_t nrows, cap;
    char **cell;        /* nrows x ncols, NULL when empty */
    const char *const *head;
    const int *right;   /* per column: 1 right-aligned; NULL: all left */
} cli_table;

/* head: ncols column titles (kept, not copied); right may be NULL. */
void cli_table_init(cli_table *t, int ncols, const char *const *head, const int *right);
/* Start a new row (the cells below go into it). */
void cli_table_row(cli_table *t);
/* Set column col of the last row, printf-style. */
void cli_table_set(cli_table *t, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Header and rows, columns two spaces apart, each line after indent; no
 * trailing spaces. */
void cli_table_print(FILE *f, const cli_table *t, const char *indent);
void cli_table_free(cli_table *t);

#endif
