/* Checkpoint files: round trip, every truncation and every flipped byte of a
 * small model's file, hand-made files that pass the checksums but carry a
 * wrong magic, version, data type, shape or count, and atomic writes. */
#include <sive/mlp.h>

#include "check_run.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

static char dir[256];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/sive-ckpt-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(dir);
}

static size_t dir_entries(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* A model and parameters with distinct values. */
static sive_mlp *small_model(float **theta, size_t in, size_t h1, size_t h2,
                             size_t k)
{
    sive_mlp *m;
    ck_assert_int_eq(sive_mlp_new(&m, in, h1, h2, k), SIVE_OK);
    *theta = malloc(sive_mlp_dim(m) * sizeof **theta);
    ck_assert_int_eq(sive_mlp_init_params(m, *theta, 99), SIVE_OK);
    return m;
}

/* Load must fail with FORMAT (or IO), leave both outputs NULL and name the
 * file in its message. */
static void expect_reject(const char *path, const char *why)
{
    sive_mlp *m = (sive_mlp *)1;
    float *th = (float *)1;
    sive_checkpoint_meta meta;
    int rc = sive_checkpoint_load(path, &m, &th, &meta);
    ck_assert_msg(rc == SIVE_E_FORMAT || rc == SIVE_E_IO,
                  "%s: status %d (%s)", why, rc, sive_last_errmsg());
    ck_assert_ptr_null(m);
    ck_assert_ptr_null(th);
    ck_assert_msg(strstr(sive_last_errmsg(), path) != NULL, "%s: '%s'", why,
                  sive_last_errmsg());
}

START_TEST(test_round_trip)
{
    make_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/model.ckpt", dir);
    float *th;
    sive_mlp *m = small_model(&th, 784, 128, 128, 10);
    size_t d = sive_mlp_dim(m);
    th[5] = -0.0f;
    th[6] = INFINITY;
    sive_checkpoint_meta meta = {12, 0xfeedfacecafebeefull, 0.25, NAN};
    ck_assert_int_eq(sive_checkpoint_save(path, m, th, &meta), SIVE_OK);
    sive_mlp *m2;
    float *th2;
    sive_checkpoint_meta meta2;
    int rc = sive_checkpoint_load(path, &m2, &th2, &meta2);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_uint_eq(sive_mlp_dim(m2), d);
    size_t s[4];
    sive_mlp_sizes(m2, &s[0], &s[1], &s[2], &s[3]);
    ck_assert(s[0] == 784 && s[1] == 128 && s[2] == 128 && s[3] == 10);
    ck_assert(memcmp(th, th2, d * sizeof *th) == 0);
    ck_assert(meta2.epoch == 12 && meta2.seed == meta.seed &&
              meta2.train_loss == 0.25 && isnan(meta2.test_loss));
    sive_free(th2);
    sive_mlp_free(m2);
    /* meta may be NULL on both sides; overwrite the existing file */
    ck_assert_int_eq(sive_checkpoint_save(path, m, th, NULL), SIVE_OK);
    ck_assert_int_eq(sive_checkpoint_load(path, &m2, &th2, NULL), SIVE_OK);
    ck_assert(memcmp(th, th2, d * sizeof *th) == 0);
    sive_free(th2);
    sive_mlp_free(m2);
    /* the file is plain zstd (skippable trailer included): ZSTD_decompress
     * gives the payload, magic first */
    size_t len;
    uint8_t *b = slurp(path, &len);
    size_t plen = 88 + 4 * d + 8;
    uint8_t *p = malloc(plen + 16);
    ck_assert_uint_eq(ZSTD_decompress(p, plen + 16, b, len), plen);
    ck_assert(memcmp(p, "SIVECKPT", 8) == 0);
    free(p);
    free(b);
    ck_assert_uint_eq(dir_entries(), 1);
    sive_free(NULL);
    free(th);
    sive_mlp_free(m);
    remove_dir();
}
END_TEST

START_TEST(test_truncated_and_flipped)
{
    make_dir();
    char path[300], bad[300];
    snprintf(path, sizeof path, "%s/small.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    float *th;
    sive_mlp *m = small_model(&th, 3, 4, 3, 2);
    sive_checkpoint_meta meta = {1, 2, 3.0, 4.0};
    ck_assert_int_eq(sive_checkpoint_save(path, m, th, &meta), SIVE_OK);
    size_t len;
    uint8_t *b = slurp(path, &len);
    ck_assert(len > 40 && len < 1000);
    /* every proper prefix, the empty file included */
    for (size_t n = 0; n < len; n++) {
        spit(bad, b, n);
        expect_reject(bad, "truncated");
    }
    /* every byte inverted, and every single bit flipped */
    for (size_t i = 0; i < len; i++) {
        for (int bit = -1; bit < 8; bit++) {
            uint8_t mask = bit < 0 ? 0xff : (uint8_t)(1u << bit);
            b[i] ^= mask;
            spit(bad, b, len);
            expect_reject(bad, "flipped");
            b[i] ^= mask;
        }
    }
    /* a byte appended */
    uint8_t *b2 = malloc(len + 1);
    memcpy(b2, b, len);
    b2[len] = 0;
    spit(bad, b2, len + 1);
    expect_reject(bad, "appended");
    free(b2);
    /* the pristine bytes still load */
    spit(bad, b, len);
    sive_mlp *m2;
    float *th2;
    ck_assert_int_eq(sive_checkpoint_load(bad, &m2, &th2, NULL), SIVE_OK);
    sive_free(th2);
    sive_mlp_free(m2);
    free(b);
    free(th);
    sive_mlp_free(m);
    remove_dir();
}
END_TEST

/* ---- files written by this independent encoder of the documented format,
 * so that they pass every checksum and only the field under test is wrong */

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Payload of a 3-4-3-2 model (39 parameters) with the given fields. */
static size_t payload(uint8_t *p, const char *magic, uint32_t version,
                      uint32_t dtype, const uint64_t sizes[4], uint64_t count,
                      size_t nparams)
{
    memcpy(p, magic, 8);
    le32(p + 8, version);
    le32(p + 12, dtype);
    for (int i = 0; i < 4; i++)
        le64(p + 16 + 8 * i, sizes[i]);
    memset(p + 48, 0, 32);
    le64(p + 80, count);
    for (size_t i = 0; i < nparams; i++)
        le32(p + 88 + 4 * i, 0x3f800000u); /* 1.0f */
    size_t n = 88 + 4 * nparams;
    le64(p + n, fnv(0xcbf29ce484222325ull, p, n));
    return n + 8;
}

static void write_crafted(const char *path, const uint8_t *p, size_t n)
{
    size_t cap = ZSTD_compressBound(n) + 20;
    uint8_t *f = malloc(cap);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t r = ZSTD_compress2(c, f, cap, p, n);
    ck_assert(!ZSTD_isError(r));
    ZSTD_freeCCtx(c);
    le32(f + r, 0x184D2A53u);
    le32(f + r + 4, 12);
    memcpy(f + r + 8, "SIVE", 4);
    le64(f + r + 12, fnv(0xcbf29ce484222325ull, f, r));
    spit(path, f, r + 20);
    free(f);
}

START_TEST(test_crafted_headers)
{
    make_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/crafted.ckpt", dir);
    uint8_t *p = malloc(1 << 16);
    const uint64_t ok[4] = {3, 4, 3, 2};
    size_t n;

    /* the encoder itself is right: its file loads */
    n = payload(p, "SIVECKPT", 1, 1, ok, 39, 39);
    write_crafted(path, p, n);
    sive_mlp *m;
    float *th;
    int rc = sive_checkpoint_load(path, &m, &th, NULL);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert(th[0] == 1.0f && th[38] == 1.0f);
    sive_free(th);
    sive_mlp_free(m);

    n = payload(p, "SIVECKPX", 1, 1, ok, 39, 39);
    write_crafted(path, p, n);
    expect_reject(path, "magic");
    ck_assert(strstr(sive_last_errmsg(), "magic"));

    n = payload(p, "SIVECKPT", 2, 1, ok, 39, 39);
    write_crafted(path, p, n);
    expect_reject(path, "version");
    ck_assert(strstr(sive_last_errmsg(), "version 2"));

    n = payload(p, "SIVECKPT", 0, 1, ok, 39, 39);
    write_crafted(path, p, n);
    expect_reject(path, "version 0");

    n = payload(p, "SIVECKPT", 1, 2, ok, 39, 39);
    write_crafted(path, p, n);
    expect_reject(path, "dtype");
    ck_assert(strstr(sive_last_errmsg(), "data type"));

    n = payload(p, "SIVECKPT", 1, 1, ok, 40, 39);
    write_crafted(path, p, n);
    expect_reject(path, "count");
    ck_assert(strstr(sive_last_errmsg(), "count"));

    n = payload(p, "SIVECKPT", 1, 1, ok, 39, 40); /* one float too many */
    write_crafted(path, p, n);
    expect_reject(path, "extra parameter");

    n = payload(p, "SIVECKPT", 1, 1, ok, 39, 38); /* one float too few */
    write_crafted(path, p, n);
    expect_reject(path, "missing parameter");

    const uint64_t zero[4] = {3, 0, 3, 2}, one_class[4] = {3, 4, 3, 1},
                   wide[4] = {(uint64_t)1 << 25, 4, 3, 2},
                   huge[4] = {1 << 24, 1 << 24, 2, 2};
    n = payload(p, "SIVECKPT", 1, 1, zero, 39, 39);
    write_crafted(path, p, n);
    expect_reject(path, "zero width");
    n = payload(p, "SIVECKPT", 1, 1, one_class, 39, 39);
    write_crafted(path, p, n);
    expect_reject(path, "one class");
    n = payload(p, "SIVECKPT", 1, 1, wide, 39, 39);
    write_crafted(path, p, n);
    expect_reject(path, "oversized width");
    n = payload(p, "SIVECKPT", 1, 1, huge, (uint64_t)1 << 48, 39);
    write_crafted(path, p, n);
    expect_reject(path, "oversized model");

    /* a zstd file that is not a checkpoint at all, and a text file */
    const char *text = "hello, this is not a checkpoint\n";
    write_crafted(path, (const uint8_t *)text, strlen(text));
    expect_reject(path, "short payload");
    spit(path, (const uint8_t *)text, strlen(text));
    expect_reject(path, "text");
    ck_assert(strstr(sive_last_errmsg(), "not a libsive checkpoint"));
    free(p);
    remove_dir();
}
END_TEST

/* Issue 14 #1: a header and a zstd frame that claim 2^32 parameters (16 GiB)
 * around a payload of a few hundred bytes.  The loader must find the file
 * malformed (SIVE_E_FORMAT) without allocating what the header claims: run
 * in a child process whose address space is limited to 1 GiB above its
 * current size, where a 16 GiB malloc fails (SIVE_E_NOMEM before the fix).
 * Under ASan the limit cannot be set (the shadow memory needs terabytes of
 * address space): ASan's allocator then refuses allocations above 1 GiB
 * instead (returning NULL), to the same effect. */
#if defined(__SANITIZE_ADDRESS__)
#define CKPT_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CKPT_HAVE_ASAN 1
#endif
#endif
#ifdef CKPT_HAVE_ASAN
/* ASAN_OPTIONS in the environment still override these. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "max_allocation_size_mb=1024:allocator_may_return_null=1";
}
#endif

static size_t huge_claim_file(uint8_t *f)
{
    /* 2304164-1864-2-2 gives exactly 2^32 parameters */
    const uint64_t sizes[4] = {2304164, 1864, 2, 2}, count = (uint64_t)1 << 32;
    uint8_t h[88];
    memcpy(h, "SIVECKPT", 8);
    le32(h + 8, 1);
    le32(h + 12, 1);
    for (int i = 0; i < 4; i++)
        le64(h + 16 + 8 * i, sizes[i]);
    memset(h + 48, 0, 32);
    le64(h + 80, count);
    size_t n = 0;
    le32(f, 0xFD2FB528u); /* zstd frame */
    f[4] = 0xC4;          /* 8-byte content size, checksum, no single segment */
    f[5] = 0x50;          /* window 1 MiB */
    le64(f + 6, 88 + 4 * count + 8);
    n = 14;
    f[n] = (uint8_t)(88 << 3); /* raw block of 88 bytes, not the last */
    f[n + 1] = (uint8_t)(88 >> 5);
    f[n + 2] = 0;
    memcpy(f + n + 3, h, 88);
    n += 3 + 88;
    const uint32_t rle = (1000u << 3) | (1u << 1); /* 1000 zero bytes */
    f[n] = (uint8_t)rle;
    f[n + 1] = (uint8_t)(rle >> 8);
    f[n + 2] = (uint8_t)(rle >> 16);
    f[n + 3] = 0;
    n += 4; /* ... and the frame ends there, without a last block */
    le32(f + n, 0x184D2A53u);
    le32(f + n + 4, 12);
    memcpy(f + n + 8, "SIVE", 4);
    le64(f + n + 12, fnv(0xcbf29ce484222325ull, f, n));
    return n + 20;
}

#ifndef CKPT_HAVE_ASAN
/* Virtual size of this process in bytes (0 if unknown). */
static uint64_t vm_size(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}
#endif


/* A junk file is refused from its two ends: the whole file is no longer
 * read first (a 256 MiB one grew the peak RSS by 256 MiB). */
START_TEST(test_junk_not_read_whole)
{
    make_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/junk.ckpt", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("junk", f);
    fclose(f);
    ck_assert_int_eq(truncate(path, (off_t)256 << 20), 0);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    sive_mlp *m = NULL;
    float *th = NULL;
    ck_assert_int_eq(sive_checkpoint_load(path, &m, &th, NULL), SIVE_E_FORMAT);
    getrusage(RUSAGE_SELF, &r1);
    ck_assert_msg(r1.ru_maxrss - r0.ru_maxrss < 64 * 1024, "peak grew by %ld kB",
                  r1.ru_maxrss - r0.ru_maxrss);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "no zstd frame"));
    unlink(path);
    remove_dir();
}
END_TEST


/* A FIFO is refused at once (opening it used to wait for a writer). */
START_TEST(test_fifo_refused)
{
    make_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/fifo.ckpt", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    sive_mlp *m = NULL;
    float *th = NULL;
    ck_assert_int_eq(sive_checkpoint_load(path, &m, &th, NULL), SIVE_E_IO);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "not a regular file"));
    unlink(path);
    remove_dir();
}
END_TEST

START_TEST(test_huge_claim_small_file)
{
    make_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/huge.ckpt", dir);
    uint8_t f[256];
    size_t n = huge_claim_file(f);
    spit(path, f, n);
    /* the file is what it claims to be: the frame announces 16 GiB */
    ck_assert_uint_eq(ZSTD_getFrameContentSize(f, n - 20),
                      88 + 4 * ((uint64_t)1 << 32) + 8);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
#ifndef CKPT_HAVE_ASAN
        uint64_t lim = vm_size() + ((uint64_t)1 << 30);
        struct rlimit rl = {(rlim_t)lim, (rlim_t)lim};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(10);
#endif
        sive_mlp *m = (sive_mlp *)1;
        float *th = (float *)1;
        int rc = sive_checkpoint_load(path, &m, &th, NULL);
        fprintf(stderr, "huge claim: status %d: %s\n", rc, sive_last_errmsg());
        if (m || th)
            _exit(11);
        if (!strstr(sive_last_errmsg(), path))
            _exit(12);
        _exit(rc == SIVE_E_FORMAT ? 0 : rc == SIVE_E_NOMEM ? 13 : 14);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st), "child killed by signal %d",
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    ck_assert_msg(WEXITSTATUS(st) != 13,
                  "SIVE_E_NOMEM: the loader allocated what the header claims");
    ck_assert_msg(WEXITSTATUS(st) == 0, "child exit status %d "
                  "(10 setrlimit, 11 outputs not NULL, 12 path not in the "
                  "message, 14 status other than FORMAT)", WEXITSTATUS(st));
    remove_dir();
}
END_TEST

/* from_bytes must fail with FORMAT, leave both outputs NULL and say
 * "checkpoint bytes". */
static void expect_bytes_reject(const uint8_t *b, size_t n, const char *why, size_t at)
{
    sive_mlp *m = (sive_mlp *)1;
    float *th = (float *)1;
    int rc = sive_checkpoint_from_bytes(b, n, &m, &th, NULL);
    ck_assert_msg(rc == SIVE_E_FORMAT, "%s at %zu: status %d (%s)", why, at, rc,
                  sive_last_errmsg());
    ck_assert_ptr_null(m);
    ck_assert_ptr_null(th);
    ck_assert_msg(strstr(sive_last_errmsg(), "checkpoint bytes") != NULL, "%s: '%s'", why,
                  sive_last_errmsg());
}

/* The bytes are the file's bit for bit, round trip through memory, and
 * every truncation and flipped bit of them is SIVE_E_FORMAT. */
START_TEST(test_bytes)
{
    make_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/small.ckpt", dir);
    float *th;
    sive_mlp *m = small_model(&th, 3, 4, 3, 2);
    sive_checkpoint_meta meta = {7, 11, 0.5, NAN}, meta2;
    void *bytes = (void *)1;
    size_t n = 1, flen;
    ck_assert_int_eq(sive_checkpoint_to_bytes(m, th, &meta, &bytes, &n), SIVE_OK);
    ck_assert_int_eq(sive_checkpoint_save(path, m, th, &meta), SIVE_OK);
    uint8_t *file = slurp(path, &flen);
    ck_assert_uint_eq(n, flen);
    ck_assert(memcmp(bytes, file, n) == 0);
    sive_mlp *m2;
    float *th2;
    ck_assert_int_eq(sive_checkpoint_from_bytes(bytes, n, &m2, &th2, &meta2), SIVE_OK);
    ck_assert_uint_eq(sive_mlp_dim(m2), sive_mlp_dim(m));
    ck_assert(memcmp(th, th2, sive_mlp_dim(m) * sizeof *th) == 0);
    ck_assert(meta2.epoch == 7 && meta2.seed == 11 && meta2.train_loss == 0.5 &&
              isnan(meta2.test_loss));
    sive_free(th2);
    sive_mlp_free(m2);
    uint8_t *b = bytes;
    for (size_t k = 0; k < n; k++)
        expect_bytes_reject(b, k, "truncated", k);
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            expect_bytes_reject(b, n, "flipped", i);
            b[i] ^= (uint8_t)(1u << bit);
        }
    uint8_t *longer = malloc(n + 1);
    memcpy(longer, b, n);
    longer[n] = 0;
    expect_bytes_reject(longer, n + 1, "appended", n);
    free(longer);
    /* the huge claim in a few bytes: refused without allocating it */
    uint8_t f[256];
    expect_bytes_reject(f, huge_claim_file(f), "huge claim", 0);
    expect_bytes_reject(NULL, 0, "empty", 0);
    /* arguments: errors as values, outputs cleared */
    ck_assert_int_eq(sive_checkpoint_from_bytes(NULL, 5, &m2, &th2, NULL), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(m2);
    ck_assert_int_eq(sive_checkpoint_from_bytes(b, n, NULL, &th2, NULL), SIVE_E_INVALID_ARG);
    void *none = (void *)1;
    size_t none_len = 1;
    ck_assert_int_eq(sive_checkpoint_to_bytes(m, NULL, NULL, &none, &none_len),
                     SIVE_E_INVALID_ARG);
    ck_assert(none == NULL && none_len == 0);
    sive_free(bytes);
    free(file);
    free(th);
    sive_mlp_free(m);
    remove_dir();
}
END_TEST

START_TEST(test_atomic_write_and_io_errors)
{
    make_dir();
    char path[300], missing[300];
    snprintf(path, sizeof path, "%s/a.ckpt", dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir/a.ckpt", dir);
    float *th;
    sive_mlp *m = small_model(&th, 5, 4, 3, 2);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sive_checkpoint_save(path, m, th, NULL), SIVE_OK);
    ck_assert_uint_eq(dir_entries(), 1); /* no temporary left behind */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);

    ck_assert_int_eq(sive_checkpoint_save(missing, m, th, NULL), SIVE_E_IO);
    ck_assert(strstr(sive_last_errmsg(), missing) != NULL);
    /* a directory in the way of the rename */
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_eq(sive_checkpoint_save(sub, m, th, NULL), SIVE_E_IO);
    ck_assert_int_eq(rmdir(sub), 0);
    ck_assert_uint_eq(dir_entries(), 1);

    sive_mlp *m2;
    float *th2;
    ck_assert_int_eq(sive_checkpoint_load(missing, &m2, &th2, NULL), SIVE_E_IO);
    ck_assert(strstr(sive_last_errmsg(), missing) != NULL);
    ck_assert_int_eq(sive_checkpoint_load(dir, &m2, &th2, NULL), SIVE_E_IO);
    ck_assert_int_eq(sive_checkpoint_load(NULL, &m2, &th2, NULL),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_checkpoint_load(path, NULL, &th2, NULL),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_checkpoint_save(path, NULL, th, NULL),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_checkpoint_save(path, m, NULL, NULL),
                     SIVE_E_INVALID_ARG);
    free(th);
    sive_mlp_free(m);
    remove_dir();
}
END_TEST

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Issue 14 #4: whatever the path's length, the message keeps its cause. */
START_TEST(test_long_path_messages)
{
    make_dir();
    float *th;
    sive_mlp *m = small_model(&th, 5, 4, 3, 2);
    /* ~4000 bytes through directories that do not exist */
    char *p = malloc(4100);
    int n = snprintf(p, 4100, "%s", dir);
    while (n < 3980)
        n += snprintf(p + n, 4100 - (size_t)n, "/d123456789");
    snprintf(p + n, 4100 - (size_t)n, "/model.ckpt");
    ck_assert_int_eq(sive_checkpoint_save(p, m, th, NULL), SIVE_E_IO);
    ck_assert_msg(ends_with(sive_last_errmsg(), strerror(ENOENT)), "%s",
                  sive_last_errmsg());
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "model.ckpt"));
    sive_mlp *m2;
    float *th2;
    ck_assert_int_eq(sive_checkpoint_load(p, &m2, &th2, NULL), SIVE_E_IO);
    ck_assert(ends_with(sive_last_errmsg(), strerror(ENOENT)));
    /* a 250-byte name is valid; with ".tmp.XXXXXX" it is not: say so */
    n = snprintf(p, 4100, "%s/", dir);
    memset(p + n, 'c', 250);
    p[n + 250] = '\0';
    ck_assert_int_eq(sive_checkpoint_save(p, m, th, NULL), SIVE_E_IO);
    ck_assert(ends_with(sive_last_errmsg(), strerror(ENAMETOOLONG)));
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "temporary file: its name"));
    ck_assert_uint_eq(dir_entries(), 0);
    free(p);
    free(th);
    sive_mlp_free(m);
    remove_dir();
}
END_TEST

static void make_aged(const char *name, long seconds)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    spit(p, (const uint8_t *)"partial", 7);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, p, t, 0), 0);
}

static int present(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* A save removes what a killed save of the same file left behind (older
 * than 10 minutes), and nothing else. */
START_TEST(test_stale_temporaries)
{
    make_dir();
    char path[300];
    snprintf(path, sizeof path, "%s/a.ckpt", dir);
    make_aged("a.ckpt.tmp.K1ll3d", 3600);
    make_aged("a.ckpt.tmp.Fresh1", 60);    /* may be a live writer's */
    make_aged("b.ckpt.tmp.K1ll3d", 3600);  /* another file's */
    make_aged("a.ckpt.tmp.K1ll3d0", 3600); /* not mkstemp's pattern */
    float *th;
    sive_mlp *m = small_model(&th, 5, 4, 3, 2);
    ck_assert_int_eq(sive_checkpoint_save(path, m, th, NULL), SIVE_OK);
    ck_assert(!present("a.ckpt.tmp.K1ll3d"));
    ck_assert(present("a.ckpt.tmp.Fresh1"));
    ck_assert(present("b.ckpt.tmp.K1ll3d"));
    ck_assert(present("a.ckpt.tmp.K1ll3d0"));
    ck_assert_uint_eq(dir_entries(), 4);
    free(th);
    sive_mlp_free(m);
    remove_dir();
}
END_TEST

static Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_truncated_and_flipped);
    tcase_add_test(tc, test_crafted_headers);
    tcase_add_test(tc, test_huge_claim_small_file);
    tcase_add_test(tc, test_fifo_refused);
    tcase_add_test(tc, test_junk_not_read_whole);
    tcase_add_test(tc, test_bytes);
    tcase_add_test(tc, test_atomic_write_and_io_errors);
    tcase_add_test(tc, test_long_path_messages);
    tcase_add_test(tc, test_stale_temporaries);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(checkpoint_suite());
}
