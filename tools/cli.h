/* Shared pieces of the `sive` command-line program. */
#ifndef SIVE_TOOLS_CLI_H
#define SIVE_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

enum { FMT_TABLE, FMT_JSON, FMT_CSV };

/* Parse helpers: print a message naming the option and return -1 on error. */
int cli_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out);
int cli_double(const char *opt, const char *s, double lo, double hi, double *out);
int cli_format(const char *s, int *out);
/* "1.2345 ± 0.0123" style cell with a fixed number of decimals. */
void cli_pm(FILE *f, double mean, double sd, int width);

int cmd_toy(int argc, char **argv);

#endif
