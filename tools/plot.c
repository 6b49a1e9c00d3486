/* The paper's Figure 1 with gnuplot: a script file beside the CSV, run in
 * that directory so that the script also works by hand later
 * (cd DIR && gnuplot trajectory.gp). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* CSV columns used (see trajectory.csv): 1 epoch, 2 train loss, 3 test loss,
 * 5/6 Online mean/std, 7/8 Retrospective, 9/10 SIVE, and the flags column
 * (its position is passed in: the library's statistics come before it). */
static const char script_head[] =
    "# Loss and LLC tracking during SGD training (Figure 1 of the SIVE paper),\n"
    "# drawn from trajectory.csv, written by `sive trajectory`.\n"
    "# Re-render in this directory with: gnuplot trajectory.gp\n"
    "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
    "    set terminal pngcairo size 1000,1000 font \"sans,11\"\n"
    "} else {\n"
    "    set terminal png size 1000,1000\n"
    "}\n"
    "set output \"trajectory.png\"\n"
    "set datafile separator \",\"\n"
    "set datafile missing \"nan\"\n"
    "# epoch 0 (the random initialisation) is in the CSV but, as in the paper,\n"
    "# not on the plot\n"
    "ep(e) = (e >= 1 ? e : NaN)\n"
    "# error bars stop at 1/10 of the value on the log axis\n"
    "lo(m, s) = (m - s > 0 ? m - s : m / 10)\n";

/* then: set multiplot ... title "<title>\n<budget>" */

static const char script_body[] =
    "set grid\n"
    "set key top right\n"
    "set xlabel \"epoch\"\n"
    "set ylabel \"loss\"\n"
    "set autoscale xfix\n"
    "set offsets 0.5, 0.5, 0, 0\n"
    "plot \"trajectory.csv\" skip 1 using (ep($1)):2 with linespoints pt 7 lw 2 title \"train loss\", \\\n"
    "     \"\" skip 1 using (ep($1)):3 with linespoints pt 5 lw 2 title \"test loss\"\n"
    "set logscale y\n"
    "set format y \"%g\"\n"
    "set ylabel \"LLC estimate (mean ± std over chains)\"\n"
    "plot \"trajectory.csv\" skip 1 using (ep($1)):7:(lo($7,$8)):($7+$8) with yerrorlines pt 9 lw 2 title \"Retrospective (final-checkpoint anchor)\", \\\n"
    "     \"\" skip 1 using (ep($1)):5:(lo($5,$6)):($5+$6) with yerrorlines pt 5 lw 2 title \"Online (own tail minimum)\", \\\n"
    "     \"\" skip 1 using (ep($1)):9:(lo($9,$10)):($9+$10) with yerrorlines pt 7 lw 2 title \"SIVE\"";

/* then, with a flags column: the SIVE points whose probe raised a health
 * flag, circled; and finally: */

static const char script_tail[] = "\nunset multiplot\n";

/* The script, with the budget in the title and the flagged points marked
 * when flags_col > 0, the legend naming the flags raised (names joined by
 * '|'; gnuplot's enhanced text would read '_' as a subscript); 0 or -1
 * (errno set). */
static int write_script(FILE *f, const char *budget, int flags_col, const char *names)
{
    fputs(script_head, f);
    fprintf(f, "set multiplot layout 2,1 title \"Loss and LLC ({/Symbol l}) during SGD training"
               "\\n%s\"\n", budget && *budget ? budget : "");
    fputs(script_body, f);
    if (flags_col > 0) {
        fprintf(f, ", \\\n     \"\" skip 1 using (ep($1)):($%d > 0 ? $9 : NaN) with points pt 6 "
                   "ps 3 lw 2 lc rgb \"red\" title \"health flag raised: ",
                flags_col);
        for (const char *c = names && *names ? names : "none"; *c; c++)
            if (*c == '|')
                fputs(", ", f);
            else if (*c == '_')
                fputs("\\\\_", f); /* a literal '_' in enhanced text */
            else
                fputc(*c, f);
        fputs(" (per point: trajectory.csv, health)\"", f);
    }
    fputs(script_tail, f);
    return ferror(f) ? -1 : 0;
}

/* Is prog an executable, on PATH when it has no '/'? */
static int find_program(const char *prog)
{
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char dir[4096];
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n < 2048) {
            snprintf(dir, sizeof dir, "%.*s/%s", (int)n, path, prog);
            struct stat st;
            if (stat(dir, &st) == 0 && S_ISREG(st.st_mode) && access(dir, X_OK) == 0)
                return 1;
        }
        path += n + (path[n] == ':');
    }
    return 0;
}

int plot_trajectory(const char *dir, int quiet, const char *budget, int flags_col,
                    const char *flag_names)
{
    char gp[4200], png[4200];
    snprintf(gp, sizeof gp, "%s/trajectory.gp", dir);
    snprintf(png, sizeof png, "%s/trajectory.png", dir);
    FILE *f = fopen(gp, "w");
    if (!f || write_script(f, budget, flags_col, flag_names) || fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", cli_cmd, gp, strerror(errno));
        return -1;
    }
    /* SIVE_GNUPLOT names another program (or a missing one, to skip) */
    const char *prog = getenv("SIVE_GNUPLOT");
    if (!prog || !*prog)
        prog = "gnuplot";
    if (!find_program(prog)) {
        if (!quiet)
            fprintf(stderr, "%s: gnuplot not found, no plot (the script %s renders it "
                            "once gnuplot is installed)\n",
                    cli_cmd, gp);
        return 1;
    }
    unlink(png); /* never report a stale picture */
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: cannot start gnuplot: %s\n", cli_cmd, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* gnuplot must never write into our stdout */
        if (chdir(dir) != 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
            _exit(126);
        char *args[] = {(char *)prog, (char *)"trajectory.gp", NULL};
        execvp(prog, args);
        _exit(127);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "%s: waiting for gnuplot: %s\n", cli_cmd, strerror(errno));
            return -1;
        }
    struct stat st;
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        if (WIFEXITED(ws))
            fprintf(stderr, "%s: gnuplot failed (exit status %d) on %s\n", cli_cmd,
                    WEXITSTATUS(ws), gp);
        else
            fprintf(stderr, "%s: gnuplot was killed by signal %d\n", cli_cmd, WTERMSIG(ws));
        return -1;
    }
    if (stat(png, &st) != 0 || st.st_size == 0) {
        fprintf(stderr, "%s: gnuplot wrote no %s\n", cli_cmd, png);
        return -1;
    }
    return 0;
}
