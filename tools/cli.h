/* Shared pieces of the `sive` command-line program. */
#ifndef SIVE_TOOLS_CLI_H
#define SIVE_TOOLS_CLI_H

#include "fmt.h"
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

/* The running command's message prefix, "sive probe" (cli_set_cmd(), from
 * main): every message on stderr starts with it, also those of the shared
 * helpers below.  "sive" before a command is chosen. */
extern const char *cli_cmd;
void cli_set_cmd(const char *name);
/* getopt_long() over opts (no short options) with the program's rules: a
 * long option is matched in full only (glibc would take any unique prefix,
 * --step for --steps), and an unknown option, an abbreviation or a missing
 * value is reported here as "<cli_cmd>: ...".  Returns the option's code,
 * -1 after the last option, '?' on an error (message printed). */
int cli_getopt(int argc, char **argv, const struct option *opts);

/* Parse helpers: print a message naming the option and return -1 on error. */
int cli_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out);
/* A seed: decimal digits, 0 .. 2^64 - 1 (a uint64_t); 0, or -1 after
 * printing "<cli_cmd>: <opt> expects ...". */
int cli_seed(const char *opt, const char *s, uint64_t *out);
int cli_double(const char *opt, const char *s, double lo, double hi, double *out);
int cli_format(const char *s, int *out);
/* "H1,H2" hidden layer widths. */
int cli_hidden(const char *s, int64_t *h1, int64_t *h2);
/* "4519 ± 10": mean rounded to sd (cli_round_pm()), padded to width
 * display columns (cli_cell()). */
void cli_pm(FILE *f, double mean, double sd, int width);

/* ---- health, wherever a number is shown ---- */

/* The mark of a table row whose result raised a health flag. */
#define CLI_FLAG_MARK "!"
/* The raised flags' machine names joined by '|' ("" when healthy), e.g.
 * "low_ess|high_rhat"; the CSV health column.  Returns buf. */
char *cli_flag_names(char *buf, size_t len, uint32_t flags);
/* One line per raised flag, "<indent>name: sive_flag_string()". */
void cli_flags_legend(FILE *f, uint32_t flags, const char *indent);
/* How chain k of r ended when it did not finish: "aborted at step 812 of
 * 3000", with its estimates from the steps it ran when the library has
 * them (not NaN); returns 0 (buf untouched) for a finished chain. */
int cli_chain_note(char *buf, size_t len, const sive_result *r, int32_t k);
/* Each non-empty line of text after prefix (e.g. sive_result_health()). */
void cli_print_lines(FILE *f, const char *text, const char *prefix);

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

/* ,"key":v -- a member after the first of a JSON object. */
void cli_json_member(FILE *f, const char *key, double v);
/* The health flags as a JSON array of their machine names
 * (sive_flag_name()), e.g. ["low_ess","high_rhat"]. */
void cli_json_flags(FILE *f, uint32_t flags);

/* ---- names: every JSON/CSV key of a statistic, trace, chain status or
 * flag is the library's (sive_stat_name(), ...).  What the program shows
 * beyond that is decided here, in one place. ---- */

/* The program's own keys, for what the library does not compute: the
 * paper's operational estimators along a trajectory (Online is
 * SIVE_STAT_ONLINE_MEAN under the paper's name, Retrospective needs every
 * checkpoint) and the toy's oracle (the noiseless loss along the chain). */
typedef enum cli_key {
    CLI_KEY_ONLINE, CLI_KEY_RETROSPECTIVE, CLI_KEY_ORACLE, CLI_KEY_ORACLE_VARIANCE,
    CLI_KEY_ORACLE_MCSE, CLI_KEY_NOISE_CORRECTION_THEORY
} cli_key;
const char *cli_key_name(cli_key k);
/* Number of statistics in the library's table (sive_stat_at()). */
int cli_stat_count(void);
/* 1 for a statistic written as the library's one summary number rather
 * than mean ± std over chains (sive_stat_info's scalar). */
int cli_stat_pooled(sive_stat s);
/* 1 for a statistic without per-chain values (SIVE_POOL_SUMMARY_ONLY). */
int cli_stat_summary_only(sive_stat s);

/* ---- probe options: the library's table (sive_option_at()) is the one
 * source of their flags (name with '_' -> '-'), bounds, defaults, parsing
 * and --help text; the CLI only chooses which a command offers. ---- */

/* getopt codes of the table's options are CLI_OPT_CODE + their index in the
 * table; commands number their own options below it. */
enum { CLI_OPT_CODE = 1000 };

/* A selection of the table's options (lists end with NULL). */
typedef struct cli_optset {
    const char *const *only; /* names offered; NULL: every option        */
    const char *const *skip; /* names left out; NULL: none               */
} cli_optset;

/* A default the CLI picks itself, shown instead of the probe's value. */
typedef struct cli_opt_note {
    const char *name, *text;
} cli_opt_note;

/* "--base-lr" without the dashes: the option's name, '_' -> '-'. */
const char *cli_opt_flag(const sive_option_info *in);
/* Append one getopt entry per option of set (NULL: all) to the
 * zero-terminated table dst of cap entries.  Returns dst. */
struct option *cli_opts_add(struct option *dst, size_t cap, const cli_optset *set);
/* For a table option's code: set it on p from arg with sive_probe_set_text()
 * (the library parses and checks the bounds) and return 1, or print the
 * library's message and return -1.  Other codes: 0. */
int cli_opt_apply(sive_probe *p, int code, const char *arg);
/* --help lines of the options of set: flag, the table's doc line, the
 * default as held by `defaults` (or a note's text) and the bounds. */
void cli_opts_usage(FILE *f, const sive_probe *defaults, const cli_optset *set,
                    const cli_opt_note *notes);
/* The options of set held by p as "name = value, ..." (json 0; unset
 * doubles left out) or JSON members "name":value,... (json 1; NaN null). */
void cli_opts_print(FILE *f, const sive_probe *p, const cli_optset *set, int json);
/* The same for a run: with r (not NULL) the values the run resolved and
 * ran (sive_result_option_int/_double: metropolis 0 or 1, c_h 0 when the
 * radius came from the loss), p's where r has none; without r and with
 * radius_auto (neither --h, --c-h nor --metropolis given: the defaults
 * decide at the start, docs/guide.md "Defaults"), c_h in text is "auto
 * (...)" instead of the 1 the probe holds. */
void cli_opts_print_run(FILE *f, const sive_probe *p, const sive_result *r,
                        const cli_optset *set, int radius_auto, int json);
/* A usage synopsis, generated so that it lists every flag, wrapped at 79
 * columns under its first word:
 *   usage: sive probe CKPT... [--data DIR] [--t X] [--base-lr X]
 *                     [--h X | --c-h X] ...
 * cli_wrap_opts() adds "[--flag INT]" / "[--flag X]" for each option of
 * set (NULL: all), the two radius options as one exclusive choice. */
typedef struct cli_wrap {
    FILE *f;
    int col, indent;
} cli_wrap;
void cli_wrap_start(cli_wrap *w, FILE *f, const char *cmd);
void cli_wrap_word(cli_wrap *w, const char *word);
/* The words of a NULL-terminated list (NULL: none). */
void cli_wrap_words(cli_wrap *w, const char *const *words);
void cli_wrap_opts(cli_wrap *w, const cli_optset *set);
void cli_wrap_end(cli_wrap *w);
/* An option's value held by p (0 / NaN if the type is wrong). */
int64_t cli_opt_int(const sive_probe *p, sive_option opt);
double cli_opt_double(const sive_probe *p, sive_option opt);

/* Output files, written atomically (tools/outfile.c): cli_out_open()
 * creates an unnamed file in path's directory (a named, locked
 * path.tmp.XXXXXX where the file system has no O_TMPFILE) and returns a
 * stream on it, or prints "prefix: <why>" and returns NULL.
 * cli_out_commit() flushes and fsyncs the file, renames it over path and
 * fsyncs the directory; cli_out_abort() removes it.  Readers never see a
 * partial file, a failed write leaves the old one in place, and a killed
 * run leaves nothing behind.  path must stay valid until the commit or the
 * abort; both free o (the stream included). */
typedef struct cli_out cli_out;
FILE *cli_out_open(cli_out **o, const char *prefix, const char *path);
/* 0, or -1 after printing the message (a write to the stream that failed
 * earlier is caught here too). */
int cli_out_commit(cli_out *o);
/* NULL is a no-op. */
void cli_out_abort(cli_out *o);

/* Before a run, so that a long run does not end in a failed write: 0 when
 * path can be written (a temporary file is created beside it and removed,
 * as cli_out_open() would), else -1 after printing "<cli_cmd>: <why>". */
int cli_out_check(const char *path);
/* 0 when path is a readable regular file, else -1 after printing
 * "<cli_cmd>: PATH: file not found" (or the reason it cannot be read). */
int cli_in_check(const char *path);

/* mkdir -p; prints a message and returns -1 on failure. */
int cli_mkdirs(const char *path);
/* Monotonic seconds. */
double cli_now(void);
/* Processors this process may run on (>= 1). */
int cli_cpus(void);
/* 1 when stdout and stderr are the same terminal (one screen shows both),
 * else 0: a line printed to each would be seen twice. */
int cli_same_terminal(void);
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
/* Their synopsis words, "--epochs E", "[--every K]", ... (NULL-terminated). */
extern const char *const train_synopsis[];
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

#define CLI_MAX_VIEWS 8
typedef struct probe_cfg {
    sive_probe *p;         /* the library options, set from the table's flags */
    int threads_set;       /* --threads given; else min(chains, cpus)        */
    int64_t blis_threads;  /* BLIS threads per chain; 0: cpus / parallel chains */
    int quiet;
    const char *radius;    /* "--h" or "--c-h" once one was given: the two
                              radius modes exclude each other             */
    const char *params;    /* --params: the moved parameters, or NULL (all) */
    const char *eval_spec[CLI_MAX_VIEWS]; /* --eval-data, n_eval of them      */
    int n_eval;
    const sive_dataset *train, *test; /* the views' data sets (sive probe) */
} probe_cfg;

/* eval_views.c: --eval-data SPEC checked (0, or -1 with a message), and
 * the views of c for checkpoint m added to c->p (train_model: the run's
 * model, reused for training-set views; test-set views get their own,
 * released by eval_views_release() after the run).  SIVE_OK or a status
 * with a message. */
typedef struct eval_views {
    sive_model model[CLI_MAX_VIEWS];
    int own[CLI_MAX_VIEWS];
    int n;
} eval_views;
int eval_spec_check(const char *spec, char *err, size_t errlen);
/* The --eval-data classes of c against its data sets c->train and c->test
 * (a class past the labels, or without an example, is a usage error
 * found before any checkpoint is loaded): 0, or -1 with a message. */
int eval_specs_data_check(const probe_cfg *c, char *err, size_t errlen);
int eval_views_add(const probe_cfg *c, const sive_mlp *m, const sive_model *train_model,
                   int blis, eval_views *v, char *err, size_t errlen);
void eval_views_release(eval_views *v);

/* A probe with the library's defaults (message printed on failure; returns
 * a libsive status).  probe_cfg_free() releases it. */
int probe_cfg_init(probe_cfg *c);
void probe_cfg_free(probe_cfg *c);
/* The probe flags: every option of the library's table, plus
 * --blis-threads.  probe_option() returns 1 when it handled code, 0 when
 * code is not one of them, -1 on a bad value (message printed). */
struct option *probe_opts_add(struct option *dst, size_t cap, const cli_optset *set);
int probe_option(probe_cfg *c, int code, const char *arg);
void probe_usage_opts(FILE *f, const cli_optset *set);
/* Their synopsis words (cli_wrap_opts() and [--blis-threads INT]). */
void probe_synopsis(cli_wrap *w, const cli_optset *set);
/* After the options: the CLI's own default for threads, min(chains, cpus). */
void probe_cfg_finish(probe_cfg *c);
/* Before any work: the --eval-data classes against c's data sets
 * (eval_specs_data_check) and whether the library accepts c's options for
 * a model of n_examples examples (checks it makes only when a run starts:
 * the tail window, the chain range, ...).  0, or EXIT_USAGE after printing
 * "<cli_cmd>: <the message>". */
int probe_cfg_check(const probe_cfg *c, uint64_t n_examples);
/* params_spec.c: --params text (A:B ranges, indices, the MLP's block
 * names when m is given) as sorted, merged ranges (*ranges malloc'd, *n
 * pairs); 0, or -1 with a message in err. */
int params_spec_ranges(const char *spec, const sive_mlp *m, uint64_t **ranges, size_t *n,
                       char *err, size_t errlen);
/* Probe one parameter vector of model m on data set train.  *out receives
 * the result whenever the library produced one; the status is the run's
 * (sive_result_status()) or, without a result, the failure's.  err
 * receives the message of a non-OK status.  pg (may be NULL) draws the
 * progress under label; its callback is registered on c->p. */
int probe_run(const probe_cfg *c, const sive_mlp *m, const float *theta,
              const sive_dataset *train, progress *pg, const char *label,
              sive_result **out, double *seconds, char *err, size_t errlen);
/* Whether a run of c on a data set of n_examples may choose its radius
 * from the loss (c_h auto, or the defaults on an exact loss): then the
 * ranks under mpirun search it once per checkpoint and share it. */
int probe_radius_searched(const probe_cfg *c, uint64_t n_examples);
/* Print the probe settings on one line (for tables and logs; before the
 * run: c_h and metropolis "auto" when the defaults decide). */
void probe_print_settings(FILE *f, const probe_cfg *c);
/* The settings as JSON object members (without braces): with r, the
 * values the run resolved and ran (cli_opts_print_run), else as asked. */
void probe_json_settings(FILE *f, const probe_cfg *c, const sive_result *r);
int cmd_probe(int argc, char **argv);
/* `sive merge`: result files of chain ranges -> the whole probe's output
 * (cmd_probe.c). */
int cmd_merge(int argc, char **argv);

/* ---- Open MPI (mpi.c; a one-rank world when built without MPI) ---- */

/* Start MPI when run under mpirun; returns the number of ranks (1 without
 * a launcher), -1 when MPI_Init failed. */
int cli_mpi_start(int *argc, char ***argv);
void cli_mpi_end(void);
int cli_mpi_rank(void);
int cli_mpi_size(void);
/* Print "sive: rank R: why" and end every rank of the job (MPI_Abort):
 * for a rank that cannot take its part in a message any more. */
_Noreturn void cli_mpi_abort(const char *why);
/* Send len bytes (an error text when is_error) to rank 0: 0 (built
 * without MPI: -1).  Only for ranks > 0 of a world of more than one rank.
 * Waiting ranks sleep between polls; an MPI error ends the job
 * (MPI_ERRORS_ARE_FATAL). */
int cli_mpi_send(const void *buf, int64_t len, int is_error);
/* Receive the next message of rank src: *buf (NUL-terminated, free()),
 * *len, *is_error.  0 (built without MPI: -1).  Only on rank 0 of a
 * world of more than one rank. */
int cli_mpi_recv(int src, char **buf, int64_t *len, int *is_error);
/* After parsing the arguments (status < 0: go on, else the exit status):
 * all ranks go on or none, since mpirun's A : B syntax gives ranks
 * arguments of their own and the others would wait for a rank that
 * stopped.  Returns status, or EXIT_USAGE (rank 0 printing "prefix: rank
 * R stopped at its arguments") when another rank stopped.  Collective. */
int cli_mpi_go(const char *prefix, int status);
/* Before any collective on a work list: every rank passes a fingerprint
 * of the work it plans (cli_hash of its unit count, inputs, options and
 * data).  Returns -1 when all agree with rank 0; otherwise EXIT_USAGE on
 * every rank, rank 0 printing "prefix: rank R plans other work than rank
 * 0 (what)" with the lowest such R, so that no rank waits for units that
 * another never sends.  Collective; a no-op in a one-rank world. */
int cli_mpi_agree(const char *prefix, uint64_t plan, const char *what);
/* FNV-1a 64 of n bytes continuing from h (start: CLI_HASH_START), and of
 * every option of p that changes a chain (all but threads and the chain
 * range). */
#define CLI_HASH_START 0xcbf29ce484222325ull
uint64_t cli_hash(uint64_t h, const void *p, size_t n);
uint64_t cli_hash_options(uint64_t h, const sive_probe *p);
/* Rank 0 sends *buf (len bytes, an error text when is_error) to every
 * rank; the others receive it as cli_mpi_recv() does.  Collective: every
 * rank calls it in the same order.  0 (a one-rank world: a no-op). */
int cli_mpi_bcast(char **buf, int64_t *len, int *is_error);
/* The same from rank root: on the others *buf is a new buffer (free()). */
int cli_mpi_bcast_from(int root, char **buf, int64_t *len, int *is_error);
/* The bytes of a file (*buf NUL-terminated, free()), and back: a result
 * as the bytes of its result file (sive_result_to_bytes(); *buf free()),
 * a result from those bytes (sive_result_from_bytes()), or a checkpoint
 * from a checkpoint file's bytes (sive_checkpoint_from_bytes()).  Each
 * returns a libsive status; err receives the message. */
int cli_file_read(const char *path, char **buf, int64_t *len, char *err, size_t errlen);
int cli_mpi_pack(const sive_result *r, const char *note, char **buf, int64_t *len, char *err,
                 size_t errlen);
int cli_mpi_unpack(const char *buf, int64_t len, sive_result **r, char **note, char *err,
                   size_t errlen);
int cli_mpi_unpack_checkpoint(const char *buf, int64_t len, sive_mlp **m, float **theta,
                              char *err, size_t errlen);
/* `sive options`: the library's option table (cmd_probe.c). */
int cmd_options(int argc, char **argv);

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

/* `sive calibrate`: one-parameter sweeps and plateau rules (cmd_calibrate.c,
 * the rules are the library's sive_calibrate(); docs/calibration.md). */
int cmd_calibrate(int argc, char **argv);

/* Draw the trajectory figure (plot.c): writes dir/trajectory.gp and runs
 * gnuplot in dir to render dir/trajectory.png from dir/trajectory.csv.
 * budget (gnuplot enhanced text, e.g. "M = 4000, 2 chains, ...") is the
 * title's second line; flags_col (1-based, 0: none) is the CSV column of
 * the health flags, whose raised points are circled; flag_names (machine
 * names joined by '|', as cli_flag_names()) are the flags those points
 * raised, named in the legend.  Returns 0 when the PNG was written, 1 when
 * gnuplot is not installed (nothing done but the script), -1 when gnuplot
 * failed (message printed). */
int plot_trajectory(const char *dir, int quiet, const char *budget, int flags_col,
                    const char *flag_names);

#endif
