/* Atomic file writes shared by the result, checkpoint and IDX writers
 * (see fileio.h; the `sive` program has its own, tools/outfile.c).
 *
 * A write goes to "<path>.tmp.XXXXXX" in the same directory (a rename is
 * only atomic within one file system), is flushed and fsynced, renamed over
 * path, and the directory is fsynced so that the rename itself survives a
 * crash.  The writer holds flock(LOCK_EX) on its temporary until the rename:
 * that is how the stale-file cleanup of the next writer tells a temporary
 * being written from one left behind by a killed process. */
#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SUFFIX_LEN (sizeof SIVEI_TMP_SUFFIX - 1)
#define RANDOM_LEN 6 /* the XXXXXX mkstemp replaces */

/* ------------------------------------------------------------------ */
/* Messages                                                           */
/* ------------------------------------------------------------------ */

/* The GNU strerror_r returns the text (maybe a static string, not buf),
 * the XSI one an int; _Generic picks the matching reader at compile time,
 * so the same source is right on glibc with _GNU_SOURCE, musl and BSDs. */
static const char *gnu_text(const char *r, char *buf, size_t len, int e)
{
    (void)e;
    if (r != buf)
        snprintf(buf, len, "%s", r ? r : "unknown error");
    return buf;
}

static const char *xsi_text(int r, char *buf, size_t len, int e)
{
    if (r != 0) /* unknown errnum or buf too small: buf is unspecified */
        snprintf(buf, len, "error %d", e);
    return buf;
}

const char *sivei_strerror(int errnum, char *buf, size_t len)
{
    if (!buf || len == 0)
        return "unknown error";
    buf[0] = '\0';
    return _Generic(strerror_r(errnum, buf, len),
                    char *: gnu_text,
                    default: xsi_text)(strerror_r(errnum, buf, len), buf, len,
                                       errnum);
}

static int is_utf8_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

/* Keep a third of the room for the head and the rest for the tail: the
 * file name at the end is what tells the reader which file it was. */
const char *sivei_path_shown(char *dst, size_t cap, const char *path)
{
    static const char cut[] = "\xE2\x80\xA6"; /* U+2026 HORIZONTAL ELLIPSIS */
    size_t n = strlen(path);
    if (n < cap || cap < sizeof cut + 2) {
        snprintf(dst, cap, "%s", path);
        return dst;
    }
    size_t room = cap - sizeof cut; /* bytes of path kept (NUL counted) */
    size_t head = room / 3, tail_at = n - (room - head);
    while (head > 0 && is_utf8_cont((unsigned char)path[head]))
        head--;
    while (tail_at < n && is_utf8_cont((unsigned char)path[tail_at]))
        tail_at++;
    memcpy(dst, path, head);
    memcpy(dst + head, cut, sizeof cut - 1);
    memcpy(dst + head + sizeof cut - 1, path + tail_at, n - tail_at + 1);
    return dst;
}

static int fail(char *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, SIVE_ERRMSG_LEN, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* "<path>: <what>: <system text>" */
static int io_fail(char *err, const sivei_atomic *a, const char *what, int e)
{
    char eb[SIVEI_STRERROR_LEN];
    return fail(err, SIVE_E_IO, "%s: %s: %s", a->shown, what,
                sivei_strerror(e, eb, sizeof eb));
}

int sivei_open_regular(const char *path, const char *shown, struct stat *st,
                       int *status, char *err)
{
    char eb[SIVEI_STRERROR_LEN];
    *status = SIVE_E_IO;
    if (stat(path, st) != 0)
        return fail(err, SIVE_E_IO, "%s: cannot open: %s", shown,
                    sivei_strerror(errno, eb, sizeof eb)), -1;
    if (!S_ISREG(st->st_mode))
        return fail(err, SIVE_E_IO, "%s: not a regular file", shown), -1;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, SIVE_E_IO, "%s: cannot open: %s", shown,
                    sivei_strerror(errno, eb, sizeof eb)), -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        int e = errno;
        close(fd);
        return fail(err, SIVE_E_IO, "%s: %s", shown,
                    S_ISREG(st->st_mode) ? sivei_strerror(e, eb, sizeof eb)
                                         : "not a regular file"), -1;
    }
    return fd;
}

/* ------------------------------------------------------------------ */
/* Names                                                              */
/* ------------------------------------------------------------------ */

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The directory part of path, newly allocated (NULL: out of memory). */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static size_t longest_component(const char *path)
{
    size_t best = 0;
    while (*path) {
        size_t n = strcspn(path, "/");
        if (n > best)
            best = n;
        path += n + (path[n] == '/');
    }
    return best;
}

/* mkstemp's alphabet, spelled out: isalnum() would depend on the locale. */
static int is_random_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9');
}

/* name == base ".tmp." followed by exactly RANDOM_LEN random characters */
static int is_tmp_name(const char *name, const char *base, size_t blen)
{
    if (strlen(name) != blen + SUFFIX_LEN || memcmp(name, base, blen) != 0 ||
        memcmp(name + blen, ".tmp.", SUFFIX_LEN - RANDOM_LEN) != 0)
        return 0;
    for (const char *p = name + blen + SUFFIX_LEN - RANDOM_LEN; *p; p++)
        if (!is_random_char(*p))
            return 0;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Stale temporaries                                                  */
/* ------------------------------------------------------------------ */

/* A regular file of ours, untouched for SIVEI_STALE_SECONDS. */
static int looks_stale(const struct stat *st, time_t now)
{
    return S_ISREG(st->st_mode) && st->st_uid == geteuid() &&
           difftime(now, st->st_mtime) > SIVEI_STALE_SECONDS;
}

/* Remove one candidate if it is stale and unlocked.  The lock is taken on
 * our own descriptor and the name re-checked before unlinking, so a file
 * that a live writer holds, or that replaced the candidate meanwhile, is
 * never removed. */
static int remove_if_stale(int dfd, const char *name, time_t now)
{
    struct stat st, fst, again;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !looks_stale(&st, now))
        return 0;
    /* O_RDWR: NFS emulates flock with write locks, which need it */
    int fd = openat(dfd, name,
                    O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int removed = 0;
    if (fstat(fd, &fst) == 0 && fst.st_dev == st.st_dev &&
        fst.st_ino == st.st_ino && looks_stale(&fst, now) &&
        flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        fstatat(dfd, name, &again, AT_SYMLINK_NOFOLLOW) == 0 &&
        again.st_dev == st.st_dev && again.st_ino == st.st_ino)
        removed = unlinkat(dfd, name, 0) == 0;
    close(fd); /* releases the lock */
    return removed;
}

static int remove_stale_in(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    const size_t blen = strlen(base);
    const time_t now = time(NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (is_tmp_name(e->d_name, base, blen))
            n += remove_if_stale(dirfd(d), e->d_name, now);
    closedir(d);
    return n;
}

int sivei_remove_stale(const char *path)
{
    if (!path || !*base_of(path))
        return 0;
    char *dir = dir_of(path);
    int n = dir ? remove_stale_in(dir, base_of(path)) : 0;
    free(dir);
    return n;
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

/* mkstemp failed with e: say which name was too long when it was the
 * temporary one (the path itself would have been fine). */
static int create_error(const sivei_atomic *a, int e, char *err)
{
    char eb[SIVEI_STRERROR_LEN];
    const char *why = sivei_strerror(e, eb, sizeof eb);
    const size_t len = strlen(a->path), base = strlen(base_of(a->path));
    long name_max = pathconf(a->dir, _PC_NAME_MAX);
    if (name_max <= 0)
        name_max = NAME_MAX;
    if (e == ENAMETOOLONG && len < PATH_MAX && len + SUFFIX_LEN >= PATH_MAX)
        return fail(err, SIVE_E_IO,
                    "%s: cannot create the temporary file: its path (this "
                    "path + \"" SIVEI_TMP_SUFFIX "\", %zu bytes) exceeds the "
                    "system's limit of %d bytes: %s",
                    a->shown, len + SUFFIX_LEN, PATH_MAX - 1, why);
    if (e == ENAMETOOLONG && base <= (size_t)name_max &&
        base + SUFFIX_LEN > (size_t)name_max &&
        longest_component(a->dir) <= (size_t)name_max)
        return fail(err, SIVE_E_IO,
                    "%s: cannot create the temporary file: its name (the file "
                    "name + \"" SIVEI_TMP_SUFFIX "\", %zu bytes) exceeds the "
                    "file system's limit of %ld bytes per name: %s",
                    a->shown, base + SUFFIX_LEN, name_max, why);
    return fail(err, SIVE_E_IO,
                "%s: cannot create a temporary file beside it: %s", a->shown,
                why);
}

/* Names and stale cleanup, before anything is created. */
static int prepare(sivei_atomic *a, const char *path, char *err)
{
    memset(a, 0, sizeof *a);
    if (!path || !*base_of(path))
        return fail(err, SIVE_E_INVALID_ARG,
                    "'%s': not a file name (empty, or ends in '/')",
                    path ? path : "(null)");
    a->path = path;
    sivei_path_shown(a->shown, sizeof a->shown, path);
    const size_t len = strlen(path);
    a->dir = dir_of(path);
    a->tmp = malloc(len + SUFFIX_LEN + 1);
    if (!a->dir || !a->tmp) {
        free(a->dir);
        free(a->tmp);
        a->dir = a->tmp = NULL;
        return fail(err, SIVE_E_NOMEM, "%s: out of memory", a->shown);
    }
    memcpy(a->tmp, path, len);
    memcpy(a->tmp + len, SIVEI_TMP_SUFFIX, SUFFIX_LEN + 1);
    remove_stale_in(a->dir, base_of(path));
    return SIVE_OK;
}

int sivei_atomic_open(sivei_atomic *a, const char *path, char *err)
{
    int rc = prepare(a, path, err);
    if (rc)
        return rc;
    int fd = mkostemp(a->tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = create_error(a, errno, err);
        free(a->tmp);
        a->tmp = NULL; /* nothing to unlink */
        sivei_atomic_abort(a);
        return rc;
    }
    /* Without lock support the file stays unlocked; the cleanup then
     * cannot lock it either and leaves it alone. */
    (void)flock(fd, LOCK_EX | LOCK_NB);
    const char *what = NULL;
    if (fchmod(fd, 0644) != 0) /* mkstemp's 0600 is too private for data */
        what = "cannot set the temporary file's mode";
    else if (!(a->f = fdopen(fd, "wb")))
        what = "cannot open the temporary file";
    if (what) {
        rc = io_fail(err, a, what, errno);
        sivei_atomic_abort(a); /* a->f is NULL here: unlinks and frees */
        close(fd);
    }
    return rc;
}

int sivei_atomic_write(sivei_atomic *a, const void *p, size_t n, char *err)
{
    if (n && fwrite(p, 1, n, a->f) != n)
        return io_fail(err, a, "write failed", errno);
    return SIVE_OK;
}

int sivei_atomic_finish(sivei_atomic *a, char *err)
{
    if (!a->f)
        return fail(err, SIVE_E_INVALID_ARG, "%s: no file open", a->shown);
    if (fflush(a->f) != 0)
        return io_fail(err, a, "write failed", errno);
    if (ferror(a->f)) /* an earlier write failed; its errno is gone */
        return fail(err, SIVE_E_IO, "%s: write failed (reported by an "
                    "earlier write to the temporary file)", a->shown);
    if (fsync(fileno(a->f)) != 0)
        return io_fail(err, a, "cannot flush it to disk", errno);
    return SIVE_OK;
}

/* fsync the directory so that the rename itself is durable. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    /* some file systems cannot fsync a directory; that is not a failure */
    if (rc != 0 && (errno == EINVAL || errno == EROFS))
        rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int sivei_atomic_commit(sivei_atomic *a, char *err)
{
    int rc = sivei_atomic_finish(a, err);
    if (!rc && rename(a->tmp, a->path) != 0)
        rc = io_fail(err, a, "cannot rename the temporary file over it",
                     errno);
    if (rc) {
        sivei_atomic_abort(a);
        return rc;
    }
    free(a->tmp);
    a->tmp = NULL;
    /* closed only now: the lock covers the temporary until the rename */
    FILE *f = a->f;
    a->f = NULL;
    if (fclose(f) != 0)
        rc = io_fail(err, a, "written, but closing it failed", errno);
    else if (sync_dir(a->dir) != 0)
        rc = io_fail(err, a, "written, but syncing its directory failed",
                     errno);
    sivei_atomic_abort(a); /* frees dir */
    return rc;
}

void sivei_atomic_abort(sivei_atomic *a)
{
    if (a->tmp)
        unlink(a->tmp); /* before the close: never visible unlocked */
    if (a->f)
        fclose(a->f);
    free(a->tmp);
    free(a->dir);
    a->tmp = a->dir = NULL;
    a->f = NULL;
}

/* ------------------------------------------------------------------ */
/* Identity                                                           */
/* ------------------------------------------------------------------ */

static int same_inode(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int sivei_same_target(const char *a, const char *b)
{
    if (strcmp(a, b) == 0 || same_inode(a, b))
        return 1;
    /* Not both existing: rename() replaces the entry named by the last
     * component inside the directory the rest resolves to, so equal
     * entries mean equal (directory inode, name). */
    if (strcmp(base_of(a), base_of(b)) != 0)
        return 0;
    char *da = dir_of(a), *db = dir_of(b);
    int same = da && db && same_inode(da, db);
    free(da);
    free(db);
    return same;
}
