/* Atomic file writes, reentrant error texts and path shortening for
 * messages (internal).  Nothing here calls into the rest of the library,
 * so that the reference library compiles its own hidden copy
 * (docs/architecture.md, "Folders and two libraries").
 *
 * Every function writes its message into err (SIVE_ERRMSG_LEN bytes, may be
 * NULL) and returns a SIVE_E_* status; library callers hand err on to
 * sivei_fail().  Messages end with the system's error text, and the path
 * they name is shortened in the middle so that this text always fits. */
#ifndef SIVE_FILEIO_H
#define SIVE_FILEIO_H

#include "internal.h"

#include <stddef.h>
#include <stdio.h>

/* Room for a path inside a message (NUL included): with the longest fixed
 * text (~160 bytes) and a system error text it stays under SIVE_ERRMSG_LEN,
 * and two paths still fit in one message. */
#define SIVEI_PATH_SHOWN 192
/* Buffer size that holds every system error text. */
#define SIVEI_STRERROR_LEN 128
/* The temporary name is "<path>" SIVEI_TMP_SUFFIX with the X replaced. */
#define SIVEI_TMP_SUFFIX ".tmp.XXXXXX"
/* A leftover temporary file of the same target is removed only once it
 * has not been written for this long (and nobody holds its lock). */
#define SIVEI_STALE_SECONDS 600

/* One file being written.  path is the caller's string and must stay valid
 * until sivei_atomic_commit() or sivei_atomic_abort(). */
typedef struct sivei_atomic {
    const char *path;             /* final name                          */
    char *dir;                    /* its directory ("." for a bare name) */
    char *tmp;                    /* temporary name; NULL when none      */
    FILE *f;                      /* write here; NULL after the commit   */
    char shown[SIVEI_PATH_SHOWN]; /* path as messages show it            */
} sivei_atomic;

/* The text of errnum, written into buf (len > 0) and returned; works with
 * both the GNU and the XSI strerror_r. */
SIVE_HIDDEN const char *sivei_strerror(int errnum, char *buf, size_t len);

/* path into dst (cap bytes), cut in the middle with "…" when it does not
 * fit, never inside a UTF-8 character.  Returns dst. */
SIVE_HIDDEN const char *sivei_path_shown(char *dst, size_t cap,
                                         const char *path);

/* Create path.tmp.XXXXXX (mode 0644, locked) beside path and open a->f on
 * it, after removing stale temporaries of the same path (see
 * sivei_remove_stale).  On failure a is left empty (abort is a no-op) and
 * the status is SIVE_E_INVALID_ARG (empty path or one ending in '/'),
 * SIVE_E_NOMEM or SIVE_E_IO. */
SIVE_HIDDEN int sivei_atomic_open(sivei_atomic *a, const char *path,
                                  char *err);
/* fwrite n bytes; SIVE_E_IO on a short write. */
SIVE_HIDDEN int sivei_atomic_write(sivei_atomic *a, const void *p, size_t n,
                                   char *err);
/* Flush the stream and fsync: the complete file is on disk under its
 * temporary name, still open and locked.  Also fails (SIVE_E_IO) if any
 * earlier write to a->f failed.  Idempotent. */
SIVE_HIDDEN int sivei_atomic_finish(sivei_atomic *a, char *err);
/* finish, rename over path, close, fsync the directory.  On failure before
 * the rename the temporary is removed and path is untouched; a failure of
 * the close or of the directory sync comes after the rename (the message
 * says "written, but").  a is empty afterwards in every case. */
SIVE_HIDDEN int sivei_atomic_commit(sivei_atomic *a, char *err);
/* Remove the temporary and release a.  Safe on an empty or committed a. */
SIVE_HIDDEN void sivei_atomic_abort(sivei_atomic *a);

/* Remove leftovers of killed writers of path: entries of its directory
 * named exactly "<basename>.tmp." plus 6 characters of mkstemp's alphabet
 * [A-Za-z0-9], that are regular files owned by this user, not modified for
 * SIVEI_STALE_SECONDS, and not locked (every writer holds flock(LOCK_EX)
 * on its temporary until the rename).  Best effort: errors are ignored.
 * Returns the number of files removed. */
SIVE_HIDDEN int sivei_remove_stale(const char *path);

/* Open path for reading if it is a regular file (fstat into *st).
 * Anything else (a FIFO, a device, a directory) is refused before it is
 * opened, since opening a FIFO blocks until a writer comes; the open is
 * non-blocking and the descriptor checked again, so one swapped in
 * between cannot block either.  Returns the descriptor, or -1 with
 * *status (SIVE_E_IO) and err set ("<shown>: not a regular file", or
 * the system's text). */
struct stat;
SIVE_HIDDEN int sivei_open_regular(const char *path, const char *shown,
                                   struct stat *st, int *status, char *err);

/* 1 when writing a and b would end in the same file: both exist and are
 * the same inode (symlinks followed, hard links too), or their directories
 * are the same inode and their last components are equal.  0 otherwise,
 * also when that cannot be decided (the write itself will then fail). */
SIVE_HIDDEN int sivei_same_target(const char *a, const char *b);

#endif
