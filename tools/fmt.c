/* Numbers rounded to their uncertainty, display widths, tables (fmt.h). */
#include "fmt.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Decimal exponent of |x| (x finite, non-zero): 10^e <= |x| < 10^(e+1). */
static int decade(double x)
{
    x = fabs(x);
    int e = (int)floor(log10(x));
    if (pow(10.0, e) > x)
        e--;
    else if (pow(10.0, e + 1) <= x)
        e++;
    return e;
}

/* The place (10^p) of u's second significant digit after rounding: 9.96
 * rounds to 10, whose second digit is the units. */
static int round_place(double u)
{
    int p = decade(u) - 1;
    if (round(u / pow(10.0, p)) >= 100.0)
        p++;
    return p;
}

/* "-0", "-0.00" -> "0", "0.00" */
static void drop_negative_zero(char *s)
{
    if (s[0] == '-' && s[1] && strspn(s + 1, "0.") == strlen(s + 1))
        memmove(s, s + 1, strlen(s));
}

/* x rounded to the place 10^p. */
static void at_place(char *buf, size_t len, double x, int p)
{
    if (p < 0) {
        snprintf(buf, len, "%.*f", -p, x);
    } else {
        double q = pow(10.0, p);
        snprintf(buf, len, "%.0f", round(x / q) * q);
    }
    drop_negative_zero(buf);
}

/* v (and u when show_u) at the place 10^p; a shared exponent for very
 * small places and very large magnitudes. */
static void format_at(char *buf, size_t len, double v, double u, int p, int show_u)
{
    double big = fmax(fabs(v), show_u ? u : 0.0);
    int sci = p < -9 || big >= 1e15;
    int e = sci && big > 0.0 ? decade(big) : 0;
    double scale = pow(10.0, e);
    char a[96], b[96];
    at_place(a, sizeof a, v / scale, p - e);
    at_place(b, sizeof b, show_u ? u / scale : 0.0, p - e);
    if (sci && show_u)
        snprintf(buf, len, "(%s ± %s)e%d", a, b, e);
    else if (sci)
        snprintf(buf, len, "%se%d", a, e);
    else if (show_u)
        snprintf(buf, len, "%s ± %s", a, b);
    else
        snprintf(buf, len, "%s", a);
}

char *cli_round_pm(char *buf, size_t len, double v, double u, int show_u)
{
    if (!len)
        return buf;
    if (!isfinite(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return buf;
    }
    u = fabs(u);
    if (isfinite(u) && u > 0.0) {
        format_at(buf, len, v, u, round_place(u), show_u);
        return buf;
    }
    /* no usable uncertainty: 4 significant digits */
    int p = v != 0.0 ? decade(v) - 3 : 0;
    if (v != 0.0 && round(fabs(v) / pow(10.0, p)) >= 10000.0)
        p++;
    format_at(buf, len, v, 0.0, p, 0);
    if (show_u && u == 0.0) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, " ± 0");
    }
    return buf;
}

size_t cli_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xC0) == 0x80)
            continue; /* continuation byte */
        /* combining diacritical marks U+0300..U+036F: CC 80..BF, CD 80..AF */
        if ((p[0] == 0xCC && (p[1] & 0xC0) == 0x80) ||
            (p[0] == 0xCD && p[1] >= 0x80 && p[1] <= 0xAF))
            continue;
        w++;
    }
    return w;
}

void cli_cell(FILE *f, const char *s, int width)
{
    size_t w = cli_width(s), want = (size_t)(width < 0 ? -width : width);
    size_t pad = w < want ? want - w : 0;
    if (width < 0)
        fprintf(f, "%*s", (int)pad, "");
    fputs(s, f);
    if (width > 0)
        fprintf(f, "%*s", (int)pad, "");
}

/* ------------------------------------------------------------------ */
/* Tables                                                             */
/* ------------------------------------------------------------------ */

void cli_table_init(cli_table *t, int ncols, const char *const *head, const int *right)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->head = head;
    t->right = right;
}

void cli_table_row(cli_table *t)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        char **cell = realloc(t->cell, cap * (size_t)t->ncols * sizeof *cell);
        if (!cell)
            return; /* the cells of this row go into the last one */
        t->cell = cell;
        t->cap = cap;
    }
    memset(t->cell + t->nrows * (size_t)t->ncols, 0, (size_t)t->ncols * sizeof *t->cell);
    t->nrows++;
}

void cli_table_set(cli_table *t, int col, const char *fmt, ...)
{
    if (!t->nrows || col < 0 || col >= t->ncols)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **c = &t->cell[(t->nrows - 1) * (size_t)t->ncols + (size_t)col];
    free(*c);
    *c = strdup(buf);
}

static const char *cell_at(const cli_table *t, size_t row, int col)
{
    const char *s = t->cell[row * (size_t)t->ncols + (size_t)col];
    return s ? s : "";
}

/* One line: cells padded to their column's width, two spaces apart,
 * nothing after the last non-empty cell. */
static void print_line(FILE *f, const cli_table *t, const size_t *w, const char *indent,
                       const char *const *cells)
{
    int last = t->ncols - 1;
    while (last > 0 && !cells[last][0])
        last--;
    fputs(indent, f);
    for (int c = 0; c <= last; c++) {
        int right = t->right && t->right[c];
        int width = c == last && !right ? 0 : (int)w[c];
        cli_cell(f, cells[c], right ? -width : width);
        if (c < last)
            fputs("  ", f);
    }
    fputc('\n', f);
}

void cli_table_print(FILE *f, const cli_table *t, const char *indent)
{
    enum { MAX_COLS = 32 };
    size_t w[MAX_COLS] = {0};
    const char *cells[MAX_COLS];
    if (t->ncols > MAX_COLS)
        return;
    for (int c = 0; c < t->ncols; c++) {
        w[c] = cli_width(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            size_t cw = cli_width(cell_at(t, r, c));
            w[c] = cw > w[c] ? cw : w[c];
        }
    }
    print_line(f, t, w, indent, t->head);
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++)
            cells[c] = cell_at(t, r, c);
        print_line(f, t, w, indent, cells);
    }
}

void cli_table_free(cli_table *t)
{
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cell[i]);
    free(t->cell);
    memset(t, 0, sizeof *t);
}

int cli_rate_decimals(double rate)
{
    return rate >= 100.0 ? 0 : rate >= 1.0 ? 1 : 3;
}
