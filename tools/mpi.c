/* Open MPI transport of the `sive` program (built with -Dmpi=enabled or
 * auto-detected): start/stop, byte messages from a rank to rank 0 and from
 * rank 0 to all, and the files those bytes stand for (result files,
 * checkpoints).  Without MPI every function behaves as a one-rank world,
 * so callers need no #ifdef.  The messages are the bytes of the library's
 * checksummed file formats: the checksum guards the transfer as it guards
 * a disk.  Results and checkpoints go to and from bytes in memory
 * (sive_result_to_bytes/_from_bytes, sive_checkpoint_from_bytes): nothing
 * touches the disk. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Bytes and files (both builds)                                       */
/* ------------------------------------------------------------------ */

int cli_file_read(const char *path, char **buf, int64_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    off_t n = -1;
    if (f && fseeko(f, 0, SEEK_END) == 0 && (n = ftello(f)) >= 0 && fseeko(f, 0, SEEK_SET) == 0 &&
        (*buf = malloc((size_t)n + 1)) && fread(*buf, 1, (size_t)n, f) == (size_t)n) {
        *len = n;
        fclose(f);
        return SIVE_OK;
    }
    /* a short read with errno unset is a file that changed under us */
    const char *why = !*buf && n >= 0 ? "out of memory"
                      : f && feof(f) ? "the file is shorter than it was"
                                     : strerror(errno);
    snprintf(err, errlen, "cannot read %s: %s", path, why);
    free(*buf);
    *buf = NULL;
    if (f)
        fclose(f);
    return SIVE_E_IO;
}

int cli_mpi_pack(const sive_result *r, const char *note, char **buf, int64_t *len, char *err,
                 size_t errlen)
{
    void *bytes = NULL;
    size_t n = 0;
    *buf = NULL;
    *len = 0;
    int rc = sive_result_to_bytes(r, note, &bytes, &n);
    if (rc) {
        snprintf(err, errlen, "%s", sive_last_errmsg());
        return rc;
    }
    /* a copy the caller frees with free(), like every message buffer
     * (received ones are the transport's) */
    if ((*buf = malloc(n + 1))) {
        memcpy(*buf, bytes, n);
        (*buf)[n] = '\0';
        *len = (int64_t)n;
    } else {
        rc = SIVE_E_NOMEM;
        snprintf(err, errlen, "out of memory for a message of %zu bytes", n);
    }
    sive_free(bytes);
    return rc;
}

int cli_mpi_unpack(const char *buf, int64_t len, sive_result **r, char **note, char *err,
                   size_t errlen)
{
    int rc = sive_result_from_bytes(buf, (size_t)len, r, note);
    if (rc)
        snprintf(err, errlen, "%s", sive_last_errmsg());
    return rc;
}

int cli_mpi_unpack_checkpoint(const char *buf, int64_t len, sive_mlp **m, float **theta,
                              char *err, size_t errlen)
{
    int rc = sive_checkpoint_from_bytes(buf, (size_t)len, m, theta, NULL);
    if (rc)
        snprintf(err, errlen, "the checkpoint as received: %s", sive_last_errmsg());
    return rc;
}

uint64_t cli_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

uint64_t cli_hash_options(uint64_t h, const sive_probe *p)
{
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        if (in->id == SIVE_OPT_THREADS || in->id == SIVE_OPT_CHAIN_BEGIN ||
            in->id == SIVE_OPT_CHAIN_END)
            continue;
        int64_t iv = 0;
        double dv = 0.0;
        if (in->type == SIVE_TYPE_INT)
            sive_probe_get_int(p, in->id, &iv);
        else
            sive_probe_get_double(p, in->id, &dv);
        h = cli_hash(cli_hash(h, &iv, sizeof iv), &dv, sizeof dv);
    }
    return h;
}

/* ------------------------------------------------------------------ */
/* The transport                                                       */
/* ------------------------------------------------------------------ */

#ifdef SIVE_HAVE_MPI
#include <mpi.h>

static int started, world_rank, world_size = 1;

/* MPI is started only under a launcher, so a plain `sive probe` never
 * pays for it: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, PMIx
 * launchers (srun --mpi=pmix, prterun) PMIX_RANK, PMI-1/2 ones (srun
 * --mpi=pmi2, MPICH's hydra) PMI_RANK.  The rank count is then
 * MPI_Comm_size's. */
static int under_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

int cli_mpi_start(int *argc, char ***argv)
{
    int provided;
    if (started || !under_launcher())
        return world_size;
    /* the library's chain and BLIS threads never call MPI; an MPI that
     * provides less than FUNNELED (SINGLE) is still enough for that, so
     * `provided` is not checked */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return -1;
    started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    return world_size;
}

void cli_mpi_end(void)
{
    if (started)
        MPI_Finalize();
    started = 0;
}

int cli_mpi_rank(void) { return world_rank; }
int cli_mpi_size(void) { return world_size; }

/* A rank waiting (for rank 0's training, for the others' chains) sleeps
 * between tests instead of spinning in MPI's progress loop, so that on
 * shared or oversubscribed cores it leaves them to the ranks at work. */
static void wait_for(MPI_Request *rq)
{
    const struct timespec nap = {0, 200000}; /* 0.2 ms */
    for (int spins = 0;; spins++) {
        int done = 0;
        MPI_Test(rq, &done, MPI_STATUS_IGNORE); /* errors abort (MPI_ERRORS_ARE_FATAL) */
        if (done)
            return;
        if (spins > 100)
            nanosleep(&nap, NULL);
    }
}

typedef enum { X_SEND, X_RECV, X_BCAST } xfer_kind;

static void xfer(xfer_kind k, void *buf, int count, MPI_Datatype t, int peer)
{
    MPI_Request rq;
    if (k == X_SEND)
        MPI_Isend(buf, count, t, peer, 0, MPI_COMM_WORLD, &rq);
    else if (k == X_RECV)
        MPI_Irecv(buf, count, t, peer, 0, MPI_COMM_WORLD, &rq);
    else
        MPI_Ibcast(buf, count, t, peer, MPI_COMM_WORLD, &rq);
    wait_for(&rq);
}

/* A message: a header (the length, or minus the length of an error text),
 * then the bytes in chunks that fit MPI's int counts.  The receiving side
 * allocates *buf (NUL-terminated); a receiver out of memory cannot leave
 * its peers waiting in the middle of a message, so it ends the job. */
static void message(xfer_kind k, int peer, char **buf, int64_t *len, int *is_error)
{
    int receiving = k == X_RECV || (k == X_BCAST && world_rank != peer);
    int64_t head = *is_error ? -*len : *len;
    xfer(k, &head, 1, MPI_INT64_T, peer);
    if (receiving) {
        *is_error = head < 0;
        *len = head < 0 ? -head : head;
        if (!(*buf = malloc((size_t)*len + 1)))
            cli_mpi_abort("out of memory for a message");
        (*buf)[*len] = '\0';
    }
    for (int64_t at = 0; at < *len;) {
        int n = *len - at > (1 << 30) ? (1 << 30) : (int)(*len - at);
        xfer(k, *buf + at, n, MPI_BYTE, peer);
        at += n;
    }
}

_Noreturn void cli_mpi_abort(const char *why)
{
    fprintf(stderr, "sive: rank %d: %s\n", world_rank, why);
    if (started)
        MPI_Abort(MPI_COMM_WORLD, EXIT_RUN);
    exit(EXIT_RUN);
}

int cli_mpi_send(const void *buf, int64_t len, int is_error)
{
    char *p = (char *)buf; /* only read: MPI_Isend takes a const buffer */
    message(X_SEND, 0, &p, &len, &is_error);
    return 0;
}

int cli_mpi_recv(int src, char **buf, int64_t *len, int *is_error)
{
    *is_error = 0;
    *len = 0;
    message(X_RECV, src, buf, len, is_error);
    return 0;
}

int cli_mpi_go(const char *prefix, int status)
{
    /* the lowest rank that stopped (status >= 0), world_size when none */
    int mine = status >= 0 ? world_rank : world_size, first = world_size;
    MPI_Request rq;
    if (!started)
        return status;
    MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &rq);
    wait_for(&rq);
    if (status >= 0 || first == world_size)
        return status;
    if (world_rank == 0)
        fprintf(stderr, "%s: rank %d stopped at its arguments\n", prefix, first);
    return EXIT_USAGE;
}

int cli_mpi_agree(const char *prefix, uint64_t plan, const char *what)
{
    if (!started)
        return -1;
    uint64_t root = plan;
    xfer(X_BCAST, &root, 1, MPI_UINT64_T, 0);
    /* the lowest rank whose plan differs from rank 0's */
    int mine = root != plan ? world_rank : world_size, first = world_size;
    MPI_Request rq;
    MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &rq);
    wait_for(&rq);
    if (first == world_size)
        return -1;
    if (world_rank == 0)
        fprintf(stderr, "%s: rank %d plans other work than rank 0 (%s): every rank needs "
                        "the same\n", prefix, first, what);
    return EXIT_USAGE;
}

int cli_mpi_bcast_from(int root, char **buf, int64_t *len, int *is_error)
{
    if (world_rank != root) {
        *is_error = 0;
        *len = 0;
    }
    message(X_BCAST, root, buf, len, is_error);
    return 0;
}

int cli_mpi_bcast(char **buf, int64_t *len, int *is_error)
{
    return cli_mpi_bcast_from(0, buf, len, is_error);
}

#else /* one process */

int cli_mpi_start(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 1;
}
void cli_mpi_end(void) {}
int cli_mpi_rank(void) { return 0; }
int cli_mpi_size(void) { return 1; }
_Noreturn void cli_mpi_abort(const char *why)
{
    fprintf(stderr, "sive: %s\n", why);
    exit(EXIT_RUN);
}
int cli_mpi_send(const void *buf, int64_t len, int is_error)
{
    (void)buf;
    (void)len;
    (void)is_error;
    return -1;
}
int cli_mpi_recv(int src, char **buf, int64_t *len, int *is_error)
{
    (void)src;
    *buf = NULL;
    *len = 0;
    *is_error = 0;
    return -1;
}
int cli_mpi_go(const char *prefix, int status)
{
    (void)prefix;
    return status;
}
int cli_mpi_agree(const char *prefix, uint64_t plan, const char *what)
{
    (void)prefix;
    (void)plan;
    (void)what;
    return -1;
}
/* the root of a one-rank world already holds the message */
int cli_mpi_bcast_from(int root, char **buf, int64_t *len, int *is_error)
{
    (void)root;
    (void)buf;
    (void)len;
    (void)is_error;
    return 0;
}

int cli_mpi_bcast(char **buf, int64_t *len, int *is_error)
{
    return cli_mpi_bcast_from(0, buf, len, is_error);
}

#endif
