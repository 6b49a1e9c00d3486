/* Progress bar on stderr (see progress.h). */
#include "progress.h"
#include "fmt.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* The duration estimate: timed after EST_AFTER seconds of the first run
 * (or from the whole first run when it is shorter), printed when the rest
 * takes longer than EST_MIN seconds. */
#define EST_AFTER 2.0
#define EST_MIN 60.0

struct progress {
    pthread_mutex_t lock;
    int notes;         /* output is not quiet: the estimate is printed  */
    int show;          /* ... and stderr is a terminal: the bar too     */
    int drawn;         /* a bar is on screen and must be erased        */
    int said;          /* the estimate was made (once per object)       */
    char label[64];
    char who[32], what[32]; /* progress_plan()                         */
    int64_t runs, started;  /* runs planned, runs started so far       */
    int32_t chains;    /* chain ids are below it                      */
    int32_t running;   /* chains the run computes (its chain range)    */
    int64_t steps;     /* per chain                                    */
    int64_t *done;     /* steps done per chain                         */
    double t0, last;   /* start, last redraw (monotonic seconds)       */
};

static volatile sig_atomic_t interrupted;

/* The run stops between two model calls; one call on a huge batch can take
 * long, so say at once that a second Ctrl-C quits (write() is
 * async-signal-safe, stdio is not). */
static void on_sigint(int sig)
{
    (void)sig;
    static const char msg[] = "\nsive: stopping after the running model call "
                              "(Ctrl-C again quits at once)\n";
    interrupted = 1;
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

void progress_catch_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    /* a second Ctrl-C kills the program the usual way */
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
}

int progress_interrupted(void) { return interrupted != 0; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

progress *progress_new(int show)
{
    progress *pg = calloc(1, sizeof *pg);
    if (!pg)
        return NULL;
    pthread_mutex_init(&pg->lock, NULL);
    pg->notes = show;
    pg->show = show && isatty(STDERR_FILENO);
    snprintf(pg->who, sizeof pg->who, "sive");
    snprintf(pg->what, sizeof pg->what, "runs");
    pg->runs = 1;
    return pg;
}

void progress_plan(progress *pg, const char *who, const char *what, int64_t runs)
{
    if (!pg)
        return;
    pthread_mutex_lock(&pg->lock);
    snprintf(pg->who, sizeof pg->who, "%s", who);
    snprintf(pg->what, sizeof pg->what, "%s", what);
    pg->runs = runs > 0 ? runs : 1;
    pthread_mutex_unlock(&pg->lock);
}

void progress_free(progress *pg)
{
    if (!pg)
        return;
    pg->said = 1; /* nothing left to estimate */
    progress_done(pg);
    pthread_mutex_destroy(&pg->lock);
    free(pg->done);
    free(pg);
}

void progress_start(progress *pg, const char *label, int32_t chains, int32_t running,
                    int64_t steps)
{
    if (!pg)
        return;
    pthread_mutex_lock(&pg->lock);
    free(pg->done);
    pg->done = calloc(chains > 0 ? (size_t)chains : 1, sizeof *pg->done);
    pg->chains = pg->done ? chains : 0;
    pg->running = running > 0 && running < pg->chains ? running : pg->chains;
    pg->steps = steps;
    snprintf(pg->label, sizeof pg->label, "%s", label ? label : "");
    pg->t0 = now();
    pg->last = 0.0;
    pg->started++;
    pthread_mutex_unlock(&pg->lock);
}

static void fmt_time(char *buf, size_t n, double s)
{
    if (!(s >= 0.0) || s > 1e7) {
        snprintf(buf, n, "--:--");
        return;
    }
    long long v = (long long)(s + 0.5);
    if (v >= 3600)
        snprintf(buf, n, "%lld:%02lld:%02lld", v / 3600, v / 60 % 60, v % 60);
    else
        snprintf(buf, n, "%lld:%02lld", v / 60, v % 60);
}

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}

/* Called with the lock held. */
static void draw(progress *pg, double t)
{
    int64_t sum = 0, total = (int64_t)pg->running * pg->steps;
    for (int32_t c = 0; c < pg->chains; c++)
        sum += pg->done[c];
    double frac = total > 0 ? (double)sum / (double)total : 0.0;
    double el = t - pg->t0;
    double rate = el > 0.0 ? (double)sum / el : 0.0;
    char eta[32], tail[96];
    fmt_time(eta, sizeof eta, rate > 0.0 ? (double)(total - sum) / rate : -1.0);
    snprintf(tail, sizeof tail, " %3.0f%% %8.1f steps/s ETA %s", 100.0 * frac, rate, eta);
    int width = term_width() - 1 - (int)strlen(pg->label) - (int)strlen(tail) - 3;
    if (width > 40)
        width = 40;
    char bar[48];
    int fill = 0;
    if (width < 5)
        width = 0;
    else
        fill = (int)(frac * width + 0.5);
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    /* \033[K clears what a longer earlier line left behind */
    if (width)
        fprintf(stderr, "\r%s [%s]%s\033[K", pg->label, bar, tail);
    else
        fprintf(stderr, "\r%s%s\033[K", pg->label, tail);
    fflush(stderr);
    pg->drawn = 1;
}

/* "45 s", "12 min", "2.5 h" */
static void fmt_duration(char *buf, size_t n, double s)
{
    if (s < 100.0)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 6000.0)
        snprintf(buf, n, "%.0f min", s / 60.0);
    else
        snprintf(buf, n, "%.1f h", s / 3600.0);
}

/* Called with the lock held: make the estimate (once) and print it on
 * stderr when the rest takes longer than EST_MIN; how says how it was
 * timed. */
static void estimate(progress *pg, double left, const char *how)
{
    pg->said = 1;
    if (!(left > EST_MIN))
        return;
    char d[32];
    fmt_duration(d, sizeof d, left);
    if (pg->drawn) {
        fputs("\r\033[K", stderr);
        pg->drawn = 0;
    }
    fprintf(stderr, "%s: this will take about %s more (%s)\n", pg->who, d, how);
    fflush(stderr);
}

/* Steps done and planned in this run. */
static void run_steps(const progress *pg, int64_t *sum, int64_t *total)
{
    *sum = 0;
    *total = (int64_t)pg->running * pg->steps;
    for (int32_t c = 0; c < pg->chains; c++)
        *sum += pg->done[c];
}

/* Called with the lock held, EST_AFTER seconds into a run: the rest of it
 * and the runs after it at the rate so far. */
static void estimate_from_rate(progress *pg, double t)
{
    int64_t sum, total, more = pg->runs - pg->started;
    run_steps(pg, &sum, &total);
    double el = t - pg->t0, rate = (double)sum / el;
    if (!(rate > 0.0))
        return; /* nothing done yet: try again at the next call */
    double left = ((double)(total - sum) + (double)(more > 0 ? more : 0) * (double)total) / rate;
    char how[160];
    if (more > 0)
        snprintf(how, sizeof how, "this run and %lld more %s, timed from the first %.1f s of "
                 "this one: %.*f chain steps/s", (long long)more, pg->what, el,
                 cli_rate_decimals(rate), rate);
    else
        snprintf(how, sizeof how, "timed from its first %.1f s: %.*f chain steps/s", el,
                 cli_rate_decimals(rate), rate);
    estimate(pg, left, how);
}

int progress_cb(int32_t chain, int64_t step, int64_t total, void *user)
{
    progress *pg = user;
    if (interrupted)
        return 1;
    if (!pg || !pg->notes)
        return 0;
    pthread_mutex_lock(&pg->lock);
    if (chain >= 0 && chain < pg->chains && step <= total)
        pg->done[chain] = step;
    double t = now();
    if (!pg->said && t - pg->t0 >= EST_AFTER)
        estimate_from_rate(pg, t);
    if (pg->show && t - pg->last >= 0.1) {
        pg->last = t;
        draw(pg, t);
    }
    pthread_mutex_unlock(&pg->lock);
    return 0;
}

void progress_done(progress *pg)
{
    if (!pg)
        return;
    pthread_mutex_lock(&pg->lock);
    int64_t sum, total, more = pg->runs - pg->started;
    run_steps(pg, &sum, &total);
    if (pg->notes && !pg->said && pg->chains > 0 && sum == total && more > 0) {
        /* a first run shorter than EST_AFTER: the runs after it take as long */
        double el = now() - pg->t0;
        char how[160];
        snprintf(how, sizeof how, "%lld more %s, timed from the first: %.1f s", (long long)more,
                 pg->what, el);
        estimate(pg, el * (double)more, how);
    }
    if (pg->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        pg->drawn = 0;
    }
    pthread_mutex_unlock(&pg->lock);
}
