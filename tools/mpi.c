/* Open MPI transport of the `sive` program (built with -Dmpi=enabled or
 * auto-detected): start/stop, and byte messages from a rank to rank 0.
 * Without MPI every function behaves as a one-rank world, so callers need
 * no #ifdef.  The messages are result files (sive_result_save()): their
 * checksum guards the transfer as it guards a disk. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#ifdef SIVE_HAVE_MPI
#include <mpi.h>

static int started, world_rank, world_size = 1;

/* MPI is started only under a launcher (Open MPI sets
 * OMPI_COMM_WORLD_SIZE), so a plain `sive probe` never pays for it. */
int cli_mpi_start(int *argc, char ***argv)
{
    if (started || !getenv("OMPI_COMM_WORLD_SIZE"))
        return world_size;
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
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

/* A header (length, or minus the length of an error text), then the
 * bytes in chunks that fit MPI's int counts. */
int cli_mpi_send(const void *buf, int64_t len, int is_error)
{
    int64_t head = is_error ? -len : len;
    if (MPI_Send(&head, 1, MPI_INT64_T, 0, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return -1;
    for (int64_t at = 0; at < len;) {
        int n = len - at > (1 << 30) ? (1 << 30) : (int)(len - at);
        if (MPI_Send((const char *)buf + at, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            return -1;
        at += n;
    }
    return 0;
}

int cli_mpi_recv(int src, char **buf, int64_t *len, int *is_error)
{
    int64_t head;
    *buf = NULL;
    if (MPI_Recv(&head, 1, MPI_INT64_T, src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
        return -1;
    *is_error = head < 0;
    *len = head < 0 ? -head : head;
    char *p = malloc((size_t)*len + 1);
    if (!p)
        return -1;
    for (int64_t at = 0; at < *len;) {
        int n = *len - at > (1 << 30) ? (1 << 30) : (int)(*len - at);
        if (MPI_Recv(p + at, n, MPI_BYTE, src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS) {
            free(p);
            return -1;
        }
        at += n;
    }
    p[*len] = '\0';
    *buf = p;
    return 0;
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

#endif
