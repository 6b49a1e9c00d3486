/* lib/common/fileio.c: reentrant error texts, path shortening, atomic writes,
 * removal of stale temporaries (and only of those), same-file detection. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fileio.h"

#include "check_run.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[1024];

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/sive-test-fileio-XXXXXX",
             base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int remove_cb(const char *p, const struct stat *sb, int flag,
                     struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void teardown(void) { nftw(tmpdir, remove_cb, 16, FTW_DEPTH | FTW_PHYS); }

/* tmpdir/name in one of 8 rotating buffers. */
static const char *tp(const char *name)
{
    static char bufs[8][1300];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
    return b;
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Set a file's (or link's) modification time to seconds ago. */
static void age(const char *path, long seconds)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* ------------------------------------------------------------------ */

START_TEST(test_strerror)
{
    char buf[SIVEI_STRERROR_LEN];
    const char *t = sivei_strerror(ENOENT, buf, sizeof buf);
    ck_assert_ptr_eq(t, buf); /* always the caller's buffer */
    ck_assert_str_eq(t, strerror(ENOENT));
    t = sivei_strerror(123456, buf, sizeof buf); /* unknown: still text */
    ck_assert(strlen(t) > 0);
    char tiny[6];
    memset(tiny, 'x', sizeof tiny);
    t = sivei_strerror(ENAMETOOLONG, tiny, sizeof tiny);
    ck_assert_ptr_eq(t, tiny);
    ck_assert(strlen(tiny) < sizeof tiny); /* truncated, terminated */
}
END_TEST

/* Valid UTF-8 (no sequence cut in two). */
static int utf8_ok(const unsigned char *s)
{
    while (*s) {
        int n = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2 : 3;
        if (*s >= 0x80 && (*s & 0xC0) == 0x80)
            return 0;
        for (s++; n > 0; n--, s++)
            if ((*s & 0xC0) != 0x80)
                return 0;
    }
    return 1;
}

START_TEST(test_path_shown)
{
    char out[SIVEI_PATH_SHOWN];
    ck_assert_str_eq(sivei_path_shown(out, sizeof out, "/a/b.idx"), "/a/b.idx");
    char *p = malloc(4001);
    memset(p, 'd', 4000);
    p[0] = '/';
    memcpy(p + 4000 - 9, "/file.idx", 9);
    p[4000] = '\0';
    sivei_path_shown(out, sizeof out, p);
    ck_assert_uint_lt(strlen(out), sizeof out);
    ck_assert(strncmp(out, "/ddd", 4) == 0);     /* head kept */
    ck_assert(ends_with(out, "ddd/file.idx"));    /* tail kept */
    ck_assert_ptr_nonnull(strstr(out, "\xE2\x80\xA6"));
    /* multi-byte names: every cut falls between characters */
    for (size_t i = 0; i + 2 <= 4000; i += 2)
        memcpy(p + i, "\xC3\xA9", 2); /* é */
    for (size_t cap = 10; cap <= sizeof out; cap += 7) {
        sivei_path_shown(out, cap, p);
        ck_assert_uint_lt(strlen(out), cap);
        ck_assert(utf8_ok((const unsigned char *)out));
    }
    free(p);
}
END_TEST

START_TEST(test_atomic_write)
{
    char err[SIVE_ERRMSG_LEN];
    sivei_atomic a;
    char path[1200];
    snprintf(path, sizeof path, "%s", tp("out.csv"));
    ck_assert_int_eq(sivei_atomic_open(&a, path, err), SIVE_OK);
    ck_assert(strncmp(a.tmp, path, strlen(path)) == 0);
    ck_assert_uint_eq(strlen(a.tmp), strlen(path) + 11);
    fprintf(a.f, "a,b\n1,2\n"); /* the CLI writes through the stream */
    ck_assert_int_eq(sivei_atomic_write(&a, "3,4\n", 4, err), SIVE_OK);
    ck_assert(!exists(path)); /* nothing visible before the commit */
    ck_assert_int_eq(sivei_atomic_commit(&a, err), SIVE_OK);
    ck_assert_ptr_null(a.tmp);
    ck_assert_ptr_null(a.f);
    sivei_atomic_abort(&a); /* harmless after a commit */
    ck_assert_uint_eq(entries(tmpdir), 1);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);
    ck_assert_int_eq(st.st_size, 12);

    /* abort: the old file stays, the temporary goes */
    ck_assert_int_eq(sivei_atomic_open(&a, path, err), SIVE_OK);
    fputs("half", a.f);
    sivei_atomic_abort(&a);
    ck_assert_uint_eq(entries(tmpdir), 1);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 12);
    /* commit twice: the second has nothing to commit */
    ck_assert_int_eq(sivei_atomic_commit(&a, err), SIVE_E_INVALID_ARG);
}
END_TEST

START_TEST(test_atomic_errors)
{
    char err[SIVE_ERRMSG_LEN];
    sivei_atomic a;
    ck_assert_int_eq(sivei_atomic_open(&a, "", err), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sivei_atomic_open(&a, tp("dir/"), err), SIVE_E_INVALID_ARG);
    sivei_atomic_abort(&a); /* a failed open leaves nothing to abort */
    ck_assert_int_eq(sivei_atomic_open(&a, tp("no/such/f"), err), SIVE_E_IO);
    ck_assert(ends_with(err, strerror(ENOENT)));
    ck_assert_ptr_nonnull(strstr(err, "no/such/f"));
    /* the rename fails (a directory is in the way): no temporary left */
    ck_assert_int_eq(mkdir(tp("sub"), 0755), 0);
    ck_assert_int_eq(sivei_atomic_open(&a, tp("sub"), err), SIVE_OK);
    ck_assert_int_eq(sivei_atomic_commit(&a, err), SIVE_E_IO);
    ck_assert_ptr_nonnull(strstr(err, "rename"));
    ck_assert_uint_eq(entries(tmpdir), 1);
    ck_assert_ptr_null(a.tmp);
}
END_TEST

/* A path of exactly len bytes under tmpdir (directories that do not
 * exist), its last component ending in name. */
static char *long_path(size_t len, const char *name)
{
    char *p = malloc(len + 1);
    size_t n = (size_t)snprintf(p, len + 1, "%s", tmpdir);
    const size_t tail = 1 + strlen(name) + 20; /* "/", padding, name */
    while (n + 11 + tail < len)
        n += (size_t)snprintf(p + n, len + 1 - n, "/d123456789");
    p[n++] = '/';
    while (n + strlen(name) < len)
        p[n++] = 'f';
    memcpy(p + n, name, strlen(name) + 1);
    ck_assert_uint_eq(strlen(p), len);
    return p;
}

START_TEST(test_long_path_messages)
{
    char err[SIVE_ERRMSG_LEN];
    sivei_atomic a;
    /* ~4000 bytes, directories missing: the cause survives the path */
    char *p = long_path(4000, "data.idx");
    ck_assert_int_eq(sivei_atomic_open(&a, p, err), SIVE_E_IO);
    ck_assert(ends_with(err, strerror(ENOENT)));
    ck_assert(strstr(err, "data.idx: cannot create"));
    ck_assert_uint_lt(strlen(err), SIVE_ERRMSG_LEN - 1);
    free(p);
    /* the path fits PATH_MAX, the temporary name (11 more bytes) does not */
    p = long_path(PATH_MAX - 6, "data.idx"); /* + 11 > PATH_MAX - 1 */
    ck_assert_uint_lt(strlen(p), PATH_MAX);
    ck_assert_uint_ge(strlen(p) + 11, PATH_MAX);
    ck_assert_int_eq(sivei_atomic_open(&a, p, err), SIVE_E_IO);
    ck_assert(ends_with(err, strerror(ENAMETOOLONG)));
    ck_assert_ptr_nonnull(strstr(err, "temporary file: its path"));
    free(p);
    /* a file name of 250 bytes: fine alone, too long with ".tmp.XXXXXX" */
    char name[251];
    memset(name, 'n', 250);
    name[250] = '\0';
    ck_assert_int_eq(sivei_atomic_open(&a, tp(name), err), SIVE_E_IO);
    ck_assert(ends_with(err, strerror(ENAMETOOLONG)));
    ck_assert_ptr_nonnull(strstr(err, "temporary file: its name"));
    ck_assert_ptr_nonnull(strstr(err, "261 bytes"));
    ck_assert_uint_eq(entries(tmpdir), 0);
}
END_TEST

START_TEST(test_remove_stale)
{
    char target[1200];
    snprintf(target, sizeof target, "%s", tp("t.bin")); /* tp() rotates */
    static const char *const removed[] = {"t.bin.tmp.AbC123", "t.bin.tmp.zzzzzz"};
    static const char *const kept[] = {
        "t.bin.tmp.young1",  /* too recent: a writer may be between writes */
        "t.bin.tmp.ab-123",  /* '-' is not in mkstemp's alphabet */
        "t.bin.tmp.AbC1234", /* 7 random characters */
        "t.bin.tmp.AbC12",   /* 5 */
        "u.bin.tmp.AbC123",  /* another target */
        "t.bin.tmp-AbC123",  /* not the library's pattern */
        "xt.bin.tmp.AbC123", /* name only ends like the target */
        "t.bin",             /* the target itself */
    };
    for (size_t i = 0; i < 2; i++) {
        put_file(tp(removed[i]), "old");
        age(tp(removed[i]), SIVEI_STALE_SECONDS + 60);
    }
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        put_file(tp(kept[i]), "keep");
        age(tp(kept[i]), i == 0 ? SIVEI_STALE_SECONDS - 60 : 86400);
    }
    ck_assert_int_eq(mkdir(tp("t.bin.tmp.DIR123"), 0755), 0);
    age(tp("t.bin.tmp.DIR123"), 86400);
    ck_assert_int_eq(symlink("t.bin", tp("t.bin.tmp.LNK123")), 0);
    age(tp("t.bin.tmp.LNK123"), 86400);
    /* a stale-looking file that a live writer holds locked */
    put_file(tp("t.bin.tmp.LOCKED"), "busy");
    int fd = open(tp("t.bin.tmp.LOCKED"), O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    age(tp("t.bin.tmp.LOCKED"), 86400);

    ck_assert_int_eq(sivei_remove_stale(target), 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_msg(!exists(tp(removed[i])), "%s left", removed[i]);
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        ck_assert_msg(exists(tp(kept[i])), "%s removed", kept[i]);
    ck_assert(exists(tp("t.bin.tmp.DIR123")));
    ck_assert(exists(tp("t.bin.tmp.LNK123")));
    ck_assert(exists(tp("t.bin.tmp.LOCKED")));
    close(fd); /* the writer died: now it goes */
    ck_assert_int_eq(sivei_remove_stale(target), 1);
    ck_assert(!exists(tp("t.bin.tmp.LOCKED")));
}
END_TEST

/* Two writers of one target: the second one's cleanup must not remove the
 * first one's temporary, however old it looks, while it is being written. */
START_TEST(test_concurrent_writer_kept)
{
    char err[SIVE_ERRMSG_LEN];
    sivei_atomic a, b;
    char path[1200];
    snprintf(path, sizeof path, "%s", tp("same.ckpt"));
    put_file(tp("same.ckpt.tmp.dead00"), "killed writer");
    age(tp("same.ckpt.tmp.dead00"), SIVEI_STALE_SECONDS + 1);
    ck_assert_int_eq(sivei_atomic_open(&a, path, err), SIVE_OK);
    ck_assert(!exists(tp("same.ckpt.tmp.dead00"))); /* the open cleaned up */
    fputs("first", a.f);
    ck_assert_int_eq(sivei_atomic_finish(&a, err), SIVE_OK);
    age(a.tmp, 86400); /* looks abandoned, but is still locked */
    ck_assert_int_eq(sivei_atomic_open(&b, path, err), SIVE_OK);
    ck_assert(exists(a.tmp));
    fputs("second", b.f);
    ck_assert_int_eq(sivei_atomic_commit(&b, err), SIVE_OK);
    ck_assert_int_eq(sivei_atomic_commit(&a, err), SIVE_OK);
    ck_assert_uint_eq(entries(tmpdir), 1);
}
END_TEST

START_TEST(test_same_target)
{
    ck_assert_int_eq(chdir(tmpdir), 0); /* each test runs in its own process */
    ck_assert_int_eq(sivei_same_target("x.idx", "x.idx"), 1);
    ck_assert_int_eq(sivei_same_target("x.idx", "./x.idx"), 1); /* neither exists */
    ck_assert_int_eq(sivei_same_target("x.idx", tp("x.idx")), 1);
    ck_assert_int_eq(sivei_same_target("x.idx", "y.idx"), 0);
    ck_assert_int_eq(sivei_same_target("x.idx", "no/such/x.idx"), 0);
    ck_assert_int_eq(mkdir("d", 0755), 0);
    ck_assert_int_eq(symlink("d", "e"), 0);
    ck_assert_int_eq(sivei_same_target("d/x.idx", "e/x.idx"), 1);
    ck_assert_int_eq(sivei_same_target("d/x.idx", "d/../x.idx"), 0);
    ck_assert_int_eq(sivei_same_target("x.idx", "d/../x.idx"), 1);
    put_file("x.idx", "x");
    put_file("y.idx", "y");
    ck_assert_int_eq(symlink("x.idx", "l.idx"), 0);
    ck_assert_int_eq(link("x.idx", "h.idx"), 0);
    ck_assert_int_eq(sivei_same_target("x.idx", "./x.idx"), 1);
    ck_assert_int_eq(sivei_same_target("x.idx", "l.idx"), 1); /* symlink */
    ck_assert_int_eq(sivei_same_target("h.idx", "x.idx"), 1); /* hard link */
    ck_assert_int_eq(sivei_same_target("x.idx", "y.idx"), 0);
    ck_assert_int_eq(sivei_same_target("x.idx", "z.idx"), 0);
}
END_TEST

static Suite *fileio_suite(void)
{
    Suite *s = suite_create("fileio");
    TCase *tc = tcase_create("fileio");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_strerror);
    tcase_add_test(tc, test_path_shown);
    tcase_add_test(tc, test_atomic_write);
    tcase_add_test(tc, test_atomic_errors);
    tcase_add_test(tc, test_long_path_messages);
    tcase_add_test(tc, test_remove_stale);
    tcase_add_test(tc, test_concurrent_writer_kept);
    tcase_add_test(tc, test_same_target);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(fileio_suite());
}
