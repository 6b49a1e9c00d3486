/* Output files of the `sive` program, written atomically with its own code
 * (the program links only libsive's public API).  The data go to an
 * unnamed file in the target's directory (O_TMPFILE), so a killed run
 * leaves nothing behind; the commit flushes and fsyncs it, links it under
 * a temporary name, renames that over the target and fsyncs the
 * directory.  Where the file system has no O_TMPFILE (or /proc is not
 * mounted) a named temporary "<path>.tmp.XXXXXX" beside the target is used
 * instead, locked with flock() as the library's writers lock theirs, so
 * that their sweep of stale temporaries never takes a live one. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TMP_SUFFIX ".tmp.XXXXXX"

struct cli_out {
    FILE *f;
    const char *path, *prefix;
    char *dir; /* the target's directory                      */
    char *tmp; /* a named temporary, or NULL while unnamed     */
};

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return !slash ? strdup(".") : slash == path ? strdup("/")
                                                : strndup(path, (size_t)(slash - path));
}

static void out_free(cli_out *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->dir);
    free(o);
}

/* A named temporary beside the target: "<path>.tmp.XXXXXX", locked. */
static int named_tmp(cli_out *o)
{
    size_t n = strlen(o->path);
    if (!(o->tmp = malloc(n + sizeof TMP_SUFFIX)))
        return -1;
    memcpy(o->tmp, o->path, n);
    memcpy(o->tmp + n, TMP_SUFFIX, sizeof TMP_SUFFIX);
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    (void)flock(fd, LOCK_EX | LOCK_NB);
    if (fchmod(fd, 0644) != 0) { /* mkstemp's 0600 is too private for data */
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

FILE *cli_out_open(cli_out **o, const char *prefix, const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (!n || path[n - 1] == '/') {
        fprintf(stderr, "%s: '%s': not a file name (empty, or ends in '/')\n", prefix,
                path ? path : "(null)");
        *o = NULL;
        return NULL;
    }
    if (!(*o = calloc(1, sizeof **o)) || !((*o)->dir = dir_of(path))) {
        fprintf(stderr, "%s: %s: out of memory\n", prefix, path);
        free(*o);
        *o = NULL;
        return NULL;
    }
    (*o)->path = path;
    (*o)->prefix = prefix;
    /* the commit names an unnamed file through /proc/self/fd */
    int fd = access("/proc/self/fd", X_OK) == 0
                 ? open((*o)->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644)
                 : (errno = EOPNOTSUPP, -1);
    if (fd < 0 && errno != ENOENT && errno != EACCES && errno != ENOTDIR)
        fd = named_tmp(*o); /* no O_TMPFILE (or no /proc) here */
    if (fd < 0 || !((*o)->f = fdopen(fd, "wb"))) {
        fprintf(stderr, "%s: %s: cannot create a temporary file beside it: %s\n", prefix,
                path, strerror(errno));
        if (fd >= 0)
            close(fd);
        out_free(*o);
        *o = NULL;
        return NULL;
    }
    return (*o)->f;
}

/* Give the unnamed file a temporary name beside the target (o->tmp). */
static int link_tmp(cli_out *o)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(o->f));
    static unsigned seq;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    size_t n = strlen(o->path);
    if (!(o->tmp = malloc(n + sizeof TMP_SUFFIX)))
        return -1;
    for (int tries = 0; tries < 16; tries++) {
        unsigned long x = ((unsigned long)getpid() * 2654435761u) ^ (unsigned long)ts.tv_nsec ^
                          (unsigned long)seq++ * 40503u;
        memcpy(o->tmp, o->path, n);
        snprintf(o->tmp + n, sizeof TMP_SUFFIX, ".tmp.%06lx", x & 0xffffff);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    free(o->tmp);
    o->tmp = NULL;
    return -1;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? -1 : fsync(fd);
    if (rc != 0 && (errno == EINVAL || errno == EROFS))
        rc = 0; /* some file systems cannot fsync a directory */
    if (fd >= 0)
        close(fd);
    return rc;
}

int cli_out_commit(cli_out *o)
{
    const char *what = NULL;
    if (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0)
        what = "cannot write the file";
    else if (!o->tmp && link_tmp(o) != 0)
        what = "cannot name the temporary file";
    else if (rename(o->tmp, o->path) != 0)
        what = "cannot rename the temporary file over it";
    if (!what) {
        free(o->tmp);
        o->tmp = NULL; /* renamed: nothing to remove */
        FILE *f = o->f;
        o->f = NULL;
        if (fclose(f) != 0 || sync_dir(o->dir) != 0)
            what = "written, but closing it or syncing its directory failed";
    }
    if (what)
        fprintf(stderr, "%s: %s: %s: %s\n", o->prefix, o->path, what, strerror(errno));
    out_free(o);
    return what ? -1 : 0;
}

void cli_out_abort(cli_out *o)
{
    if (o)
        out_free(o);
}
