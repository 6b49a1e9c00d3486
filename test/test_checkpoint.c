/* Checkpoint files: round trip, every truncation and every flipped byte of a
 * small model's file, hand-made files that pass the checksums but carry a
 * wrong magic, version, data type, shape or count, and atomic writes. */
#include <sive/mlp.h>

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_truncated_and_flipped);
    tcase_add_test(tc, test_crafted_headers);
    tcase_add_test(tc, test_atomic_write_and_io_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(checkpoint_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
