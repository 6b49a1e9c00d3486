/* Shared pieces of the `sive` command-line program. */
#ifndef SIVE_TOOLS_CLI_H
#define SIVE_TOOLS_CLI_H

#include "progress.h"
#include "toy.h"

#include <getopt.h>
#include <sive/data.h>
#include <sive/mlp.h>
#include <sive/sive.h>
#include <stdint.h>
#include <stdio.h>

enum { FMT_TABLE, FMT_JSON, FMT_CSV };

/* Exit codes of every command: 0 success, 1 a run or file failed, 2 bad
 * usage, 130 interrupted (Ctrl-C). */
enum { EXIT_RUN = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

/* Parse helpers: print a message naming the option and return -1 on error. */
int cli_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out);
int cli_double(const char *opt, const char *s, double lo, double hi, double *out);
int cli_format(const char *s, int *out);
/* "H1,H2" hidden layer widths. */
int cli_hidden(const char *s, int64_t *h1, int64_t *h2);
/* "1.2345 ± 0.0123" style cell with a fixed number of decimals. */
void cli_pm(FILE *f, double mean, double sd, int width);

/* JSON and CSV output: non-finite numbers become null (JSON) or "nan" (CSV);
 * strings are escaped / quoted as needed. */
void cli_json_num(FILE *f, double v);
void cli_json_str(FILE *f, const char *s);
void cli_csv_str(FILE *f, const char *s);
/* Lines of s (empty ones skipped) as a JSON array of strings. */
void cli_json_lines(FILE *f, const char *s);

/* Concatenate option tables (each ends with a zero entry) into dst, which
 * holds cap entries.  Returns dst. */
struct option *cli_opts_cat(struct option *dst, size_t cap, const struct option *a,
                            const struct option *b);

/* mkdir -p; prints a message and returns -1 on failure. */
int cli_mkdirs(const char *path);
/* Monotonic seconds. */
double cli_now(void);
/* Processors this process may run on (>= 1). */
int cli_cpus(void);
/* Mean and sample std (ddof 1) of the finite entries of x[0..n-1]: NaN
 * without any, std NaN with fewer than two. */
void cli_mean_std(const double *x, size_t n, double *mean, double *std);

/* The bundled data directory: $SIVE_DATA_DIR, else the installed copy, else
 * the one beside the executable's install prefix, else the source tree's
 * data/.  Static storage. */
const char *cli_data_dir(void);
/* Open a data directory (NULL: cli_data_dir()) and print a message on
 * failure (prefix: the command's name).  Returns a libsive status. */
int cli_open_data(const char *prefix, const char *dir, sive_dataset **train,
                  sive_dataset **test, int quiet);

/* ---- training (cmd_train.c) ---- */

typedef struct train_cfg {
    const char *data_dir;  /* NULL: cli_data_dir() */
    const char *out_dir;
    uint64_t seed;
    int64_t epochs, every, batch, h1, h2, threads;
    double lr;
    int quiet;
} train_cfg;

typedef struct train_row {
    int64_t epoch;
    double train_loss, test_loss, train_acc, test_acc, running_loss, seconds;
    char path[4096];       /* the checkpoint written */
} train_row;

void train_defaults(train_cfg *c);
/* Options shared by `train` and `trajectory`; train_option()
 * returns 1 when it handled code, 0 when code is not one of them, -1 on a
 * bad value (message printed). */
extern const struct option train_longopts[];
extern const char train_usage_opts[];
int train_option(train_cfg *c, int code, const char *arg);
/* Train c->epochs epochs, writing checkpoints epoch_0, epoch_K, epoch_2K, ...
 * and epoch_E (K = c->every) into c->out_dir (which must exist), one row per
 * checkpoint into rows (room for epochs + 1) and their number into *n_rows.
 * One line per epoch goes to log (NULL: none).  Returns a libsive status;
 * err receives the message. */
int train_run(const train_cfg *c, const sive_dataset *train, const sive_dataset *test,
              FILE *log, train_row *rows, int64_t *n_rows, char *err, size_t errlen);
int cmd_train(int argc, char **argv);

/* ---- probing (cmd_probe.c) ---- */

typedef struct probe_cfg {
    double t, base_lr, c_h, h, burn_in, anchor; /* h, anchor: NaN = unset */
    int64_t steps, groups, eval_batch, grad_batch, chains, threads, blis_threads,
        stride;
    uint64_t seed;
    int quiet;
} probe_cfg;

void probe_defaults(probe_cfg *c);
extern const struct option probe_longopts[];
extern const char probe_usage_opts[];
int probe_option(probe_cfg *c, int code, const char *arg);
/* Probe one parameter vector of model m on data set train.  *out receives
 * the result whenever the library produced one (also for SIVE_E_DIVERGED
 * and friends); the status is the run's.  err receives the message of a
 * non-OK status.  pg (may be NULL) draws the progress under label. */
int probe_run(const probe_cfg *c, const sive_mlp *m, const float *theta,
              const sive_dataset *train, progress *pg, const char *label,
              sive_result **out, double *seconds, char *err, size_t errlen);
/* Print the probe settings on one line (for tables and logs). */
void probe_print_settings(FILE *f, const probe_cfg *c);
/* The settings as JSON object members (without braces). */
void probe_json_settings(FILE *f, const probe_cfg *c);
int cmd_probe(int argc, char **argv);

/* ---- the rest ---- */

/* Print the toy Table 1 for n models (cmd_toy.c). */
void toy_print_table(FILE *f, const toy_config *cfg, const toy_report *rep, int n);
int cmd_toy(int argc, char **argv);

/* Trajectory: train + probe every checkpoint + table/CSV/JSON/plot. */
typedef struct trajectory_cfg {
    train_cfg train;
    probe_cfg probe;
    int format, plot;
    const char *budget_note; /* demo: printed in the header and stored in JSON */
} trajectory_cfg;
int trajectory_run(const trajectory_cfg *c);
int cmd_trajectory(int argc, char **argv);
int cmd_demo(int argc, char **argv);

/* Draw the trajectory figure (plot.c): writes dir/trajectory.gp and runs
 * gnuplot in dir to render dir/trajectory.png from dir/trajectory.csv.
 * Returns 0 when the PNG was written, 1 when gnuplot is not installed
 * (nothing done but the script), -1 when gnuplot failed (message printed). */
int plot_trajectory(const char *dir, int quiet);

#endif
