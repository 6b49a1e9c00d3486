/* Seed corpora for the fuzz targets, made from the project's own data:
 *   fuzz_seeds DATA_DIR OUT_DIR
 * reads DATA_DIR/mnist-10k-{images-idx3,labels-idx1}-ubyte.zst (the bundled
 * digits) and writes OUT_DIR/<target>/seed-NN for every target of
 * test/fuzz: small IDX pairs cut from the digits (8 images of 28 x 28,
 * 3 of 7 x 7, one of 2 x 3, 2100 of 4 x 4 for the subset split) in plain,
 * gzip and zstd form (multi-member and multi-frame, a leading skippable
 * frame), MNIST directories, and checkpoints of four small models written
 * by sive_checkpoint_save(), and result files of small probes of a toy
 * model (whole runs, chain ranges, a diverged chain, a cancelled run,
 * a callback error) written by sive_result_save().  Called by
 * test/fuzz/make_corpus.sh. */
#include <sive/data.h>
#include <sive/mlp.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void die(const char *what)
{
    fprintf(stderr, "fuzz_seeds: %s (%s; %s)\n", what, strerror(errno),
            sive_last_errmsg());
    exit(1);
}

static void put(buf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 1024;
        while (c < b->n + n)
            c *= 2;
        if (!(b->p = realloc(b->p, c)))
            die("realloc");
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_u16(buf *b, size_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}

static const char *out_dir;

static void save(const char *target, int k, const buf *b)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", out_dir, target);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/seed-%02d", out_dir, target, k);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b->p, 1, b->n, f) != b->n || fclose(f) != 0)
        die(p);
}

/* ---- IDX (decoded) ---- */

static void idx_header(buf *b, int nd, const size_t *dims)
{
    uint8_t h[4] = {0, 0, 8, (uint8_t)nd};
    put(b, h, 4);
    for (int i = 0; i < nd; i++) {
        uint8_t d[4] = {(uint8_t)(dims[i] >> 24), (uint8_t)(dims[i] >> 16),
                        (uint8_t)(dims[i] >> 8), (uint8_t)dims[i]};
        put(b, d, 4);
    }
}

/* Images first..first+n-1 of all, pooled by `pool` (mean of pool x pool
 * blocks) then cropped to rows x cols. */
typedef struct pair {
    buf img, lab;
} pair;

static pair cut(const sive_dataset *all, size_t n, size_t pool, size_t rows,
                size_t cols)
{
    pair p = {{0}, {0}};
    size_t R = sive_dataset_rows(all), C = sive_dataset_cols(all);
    size_t dims[3] = {n, rows, cols};
    idx_header(&p.img, 3, dims);
    idx_header(&p.lab, 1, dims);
    for (size_t k = 0; k < n; k++) {
        const uint8_t *im = sive_dataset_pixels(all) + k * R * C;
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++) {
                unsigned s = 0;
                for (size_t i = 0; i < pool; i++)
                    for (size_t j = 0; j < pool; j++)
                        s += im[(r * pool + i) * C + c * pool + j];
                uint8_t v = (uint8_t)(s / (pool * pool));
                put(&p.img, &v, 1);
            }
        put(&p.lab, sive_dataset_labels(all) + k, 1);
    }
    return p;
}

/* ---- encodings ---- */

enum { PLAIN, GZ, GZ2, ZST, ZST2, ZSTSKIP };

static void gz(buf *out, const uint8_t *p, size_t n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 16 + 15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        die("deflateInit2");
    size_t bound = deflateBound(&z, (uLong)n) + 64;
    uint8_t *tmp = malloc(bound);
    z.next_in = (Bytef *)(uintptr_t)p;
    z.avail_in = (uInt)n;
    z.next_out = tmp;
    z.avail_out = (uInt)bound;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        die("deflate");
    put(out, tmp, z.total_out);
    deflateEnd(&z);
    free(tmp);
}

static void zst(buf *out, const uint8_t *p, size_t n)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 19);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    size_t bound = ZSTD_compressBound(n);
    uint8_t *tmp = malloc(bound);
    size_t r = ZSTD_compress2(c, tmp, bound, p, n);
    if (ZSTD_isError(r))
        die("ZSTD_compress2");
    put(out, tmp, r);
    free(tmp);
    ZSTD_freeCCtx(c);
}

static buf encode(const buf *in, int how)
{
    buf o = {0};
    size_t h = in->n / 2;
    switch (how) {
    case PLAIN: put(&o, in->p, in->n); break;
    case GZ: gz(&o, in->p, in->n); break;
    case GZ2:
        gz(&o, in->p, h);
        gz(&o, in->p + h, in->n - h);
        break;
    case ZST: zst(&o, in->p, in->n); break;
    case ZST2:
        zst(&o, in->p, h);
        zst(&o, in->p + h, in->n - h);
        break;
    case ZSTSKIP: {
        static const uint8_t skip[12] = {0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0,
                                         'S',  'I',  'V',  'E'};
        put(&o, skip, sizeof skip);
        zst(&o, in->p, in->n);
        break;
    }
    }
    return o;
}

/* idx_memory: u16 L, labels file, images file */
static void seed_memory(int k, const pair *p, int hi, int hl)
{
    buf i = encode(&p->img, hi), l = encode(&p->lab, hl), s = {0};
    put_u16(&s, l.n);
    put(&s, l.p, l.n);
    put(&s, i.p, i.n);
    save("fuzz_idx_memory", k, &s);
    free(i.p);
    free(l.p);
    free(s.p);
}

/* idx_files: mode, u16 L, decoded labels, decoded images */
static void seed_files(int k, const pair *p, int mode)
{
    buf s = {0};
    uint8_t m = (uint8_t)mode;
    put(&s, &m, 1);
    put_u16(&s, p->lab.n);
    put(&s, p->lab.p, p->lab.n);
    put(&s, p->img.p, p->img.n);
    save("fuzz_idx_files", k, &s);
    free(s.p);
}

/* open_dir: mode, a flag byte per file, files (u16 length but the last) */
static void seed_dir(int k, int official, const uint8_t *flags,
                     const buf *const *files, const int *how)
{
    int n = official ? 4 : 2;
    buf s = {0};
    uint8_t m = (uint8_t)official;
    put(&s, &m, 1);
    put(&s, flags, (size_t)n);
    for (int i = 0; i < n; i++) {
        buf e = encode(files[i], how[i]);
        if (i + 1 < n)
            put_u16(&s, e.n);
        put(&s, e.p, e.n);
        free(e.p);
    }
    save("fuzz_open_dir", k, &s);
    free(s.p);
}

/* ---- checkpoints ---- */

static buf checkpoint(size_t in, size_t h1, size_t h2, size_t k,
                      const sive_checkpoint_meta *meta, int specials)
{
    sive_mlp *m;
    if (sive_mlp_new(&m, in, h1, h2, k))
        die("sive_mlp_new");
    size_t d = sive_mlp_dim(m);
    float *th = malloc(d * sizeof *th);
    sive_mlp_init_params(m, th, 7);
    if (specials) {
        th[0] = -0.0f;
        th[1] = INFINITY;
        th[2] = NAN;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tmp.ckpt", out_dir);
    if (sive_checkpoint_save(path, m, th, meta))
        die("sive_checkpoint_save");
    free(th);
    sive_mlp_free(m);
    buf b = {0};
    FILE *f = fopen(path, "rb");
    uint8_t chunk[4096];
    size_t r;
    while (f && (r = fread(chunk, 1, sizeof chunk, f)) > 0)
        put(&b, chunk, r);
    if (!f)
        die(path);
    fclose(f);
    remove(path);
    return b;
}

/* ---- result files ---- */

/* K = |x|^2 / 2 in 2 dimensions, group means with a little noise;
 * user = 1 makes the evaluation fail at step 5 (a callback error), user =
 * 2 gives a NaN loss from step 8 on (every chain diverges). */
static int toy_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                    double *loss, void *user)
{
    (void)b;
    (void)user;
    const double *x = theta;
    double *g = grad;
    *loss = 0.0;
    for (size_t i = 0; i < d; i++) {
        g[i] = x[i];
        *loss += 0.5 * x[i] * x[i];
    }
    return 0;
}

static int toy_groups(const void *theta, size_t d, const sive_batch *b, double *gl, void *user)
{
    const double *x = theta;
    if (user == (void *)1 && b->step == 5)
        return 7;
    double k = 0.0;
    for (size_t i = 0; i < d; i++)
        k += 0.5 * x[i] * x[i];
    for (size_t j = 0; j < b->n_groups; j++)
        gl[j] = user == (void *)2 && b->step >= 8 ? NAN
                : k + 1e-3 * (double)((b->seed >> (j % 60)) & 7);
    return 0;
}

/* Per-example losses of the toy (refined 2: control variates on the run
 * and its view, the VIEWCV section): the loss plus a term per example. */
static int toy_examples(const void *theta, size_t d, const sive_batch *b, double *losses,
                        void *user)
{
    (void)user;
    const double *x = theta;
    double k = 0.0;
    for (size_t i = 0; i < d; i++)
        k += 0.5 * x[i] * x[i];
    for (size_t j = 0; j < b->group_size; j++)
        losses[j] = k + 1e-2 * (double)(b->index[j] % 5) * x[0];
    return 0;
}

static int toy_cancel(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)chain;
    (void)total;
    (void)user;
    return step >= 6;
}

/* One probe of the toy (chains [begin, end) of K, base_lr lr, user
 * fail; refined: parameter 1 only and an evaluation view, the optional
 * sections of the file; 2: with per-example losses and control variates,
 * the view's too), saved
 * with note, as two seeds: mode 0 and the payload (the target frames it),
 * mode 4 and the whole file. */
static void result_seed(int *k, int64_t K, int64_t begin, int64_t end, double lr,
                        int fail, int cancel, int refined, const char *note)
{
    sive_model m;
    sive_model_init(&m, sizeof m);
    m.dtype = SIVE_F64;
    m.dim = 2;
    m.grad = toy_grad;
    m.group_loss = toy_groups;
    m.user = (void *)(intptr_t)fail;
    m.identity = 0x5eed;
    sive_probe *p;
    if (sive_probe_new(&p))
        die("sive_probe_new");
    const struct { sive_option o; int64_t v; } iv[] = {
        {SIVE_OPT_STEPS, 16}, {SIVE_OPT_GROUPS, 3}, {SIVE_OPT_CHAINS, K},
        {SIVE_OPT_THREADS, 1}, {SIVE_OPT_CHAIN_BEGIN, begin}, {SIVE_OPT_CHAIN_END, end},
        {SIVE_OPT_EVAL_STRIDE, 1 + (K % 2)}};
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++)
        if (sive_probe_set_int(p, iv[i].o, iv[i].v))
            die("sive_probe_set_int");
    if (sive_probe_set_double(p, SIVE_OPT_BASE_LR, lr) ||
        sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.5) ||
        (cancel && sive_probe_set_progress(p, toy_cancel, NULL)))
        die("options");
    if (refined == 2) {
        m.loss = toy_examples;
        m.n_examples = 8;
        if (sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 1))
            die("control_variate");
    }
    const uint64_t one[] = {1, 2};
    if (refined && (sive_probe_set_params(p, one, 1) ||
                    sive_probe_add_eval_view(p, "view", &m, NULL, 0)))
        die("refined");
    const double theta[2] = {0.5, -0.25};
    sive_result *r = NULL;
    if (sive_probe_run(p, &m, theta, &r))
        die("sive_probe_run");
    char path[4096];
    snprintf(path, sizeof path, "%s/tmp.sres", out_dir);
    if (sive_result_save(r, path, note))
        die("sive_result_save");
    sive_result_free(r);
    sive_probe_free(p);
    buf f = {0}, s = {0};
    FILE *in = fopen(path, "rb");
    uint8_t chunk[4096];
    size_t n;
    while (in && (n = fread(chunk, 1, sizeof chunk, in)) > 0)
        put(&f, chunk, n);
    if (!in || f.n < 32)
        die(path);
    fclose(in);
    remove(path);
    uint8_t mode = 0;
    put(&s, &mode, 1);
    put(&s, f.p + 24, f.n - 32); /* the payload, between header and hash */
    save("fuzz_result_file", (*k)++, &s);
    s.n = 0;
    mode = 4;
    put(&s, &mode, 1);
    put(&s, f.p, f.n);
    save("fuzz_result_file", (*k)++, &s);
    free(f.p);
    free(s.p);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fuzz_seeds DATA_DIR OUT_DIR\n");
        return 2;
    }
    out_dir = argv[2];
    mkdir(out_dir, 0755);
    char ip[4096], lp[4096];
    snprintf(ip, sizeof ip, "%s/mnist-10k-images-idx3-ubyte.zst", argv[1]);
    snprintf(lp, sizeof lp, "%s/mnist-10k-labels-idx1-ubyte.zst", argv[1]);
    sive_dataset *all;
    if (sive_dataset_load_idx(&all, ip, lp))
        die("loading the bundled digits");

    pair a = cut(all, 8, 1, 28, 28), b = cut(all, 3, 4, 7, 7),
         c = cut(all, 1, 1, 2, 3), d = cut(all, 2100, 7, 4, 4),
         tr = cut(all, 20, 4, 7, 7);
    /* a test set: the 20 images after the training ones */
    pair te = {{0}, {0}};
    {
        size_t dims[3] = {5, 7, 7};
        idx_header(&te.img, 3, dims);
        idx_header(&te.lab, 1, dims);
        pair t = cut(all, 25, 4, 7, 7);
        put(&te.img, t.img.p + 16 + 20 * 49, 5 * 49);
        put(&te.lab, t.lab.p + 8 + 20, 5);
        free(t.img.p);
        free(t.lab.p);
    }

    int k = 0;
    seed_memory(k++, &a, PLAIN, PLAIN);
    seed_memory(k++, &a, ZST, ZST);
    seed_memory(k++, &a, GZ, GZ);
    seed_memory(k++, &b, ZST2, GZ2);
    seed_memory(k++, &c, ZSTSKIP, PLAIN);
    seed_memory(k++, &b, GZ, ZST);
    seed_memory(k++, &d, ZST, ZST);

    k = 0;
    seed_files(k++, &a, 0);
    seed_files(k++, &b, 1);
    seed_files(k++, &c, 0);
    seed_files(k++, &tr, 1);

    k = 0;
    {
        const buf *files[4] = {&d.img, &d.lab};
        const uint8_t f0[2] = {1 << 2, 1 << 2}; /* both .zst */
        const int h0[2] = {ZST, ZST};
        seed_dir(k++, 0, f0, files, h0);
        const uint8_t f1[2] = {2 << 2 | 2, 0}; /* dotted .gz, plain */
        const int h1[2] = {GZ, PLAIN};
        seed_dir(k++, 0, f1, files, h1);
        const buf *off[4] = {&tr.img, &tr.lab, &te.img, &te.lab};
        const uint8_t f2[4] = {0, 1 << 2 | 2, 2 << 2, 0};
        const int h2[4] = {PLAIN, ZST, GZ, PLAIN};
        seed_dir(k++, 1, f2, off, h2);
        const uint8_t f3[4] = {1 << 2, 1 << 2, 1 << 2, 1}; /* one missing */
        const int h3[4] = {ZST, ZST, ZST, ZST};
        seed_dir(k++, 1, f3, off, h3);
        const buf *mixed[4] = {&b.img, &b.lab, &a.img, &a.lab}; /* 7x7, 28x28 */
        const uint8_t f4[4] = {0, 0, 0, 0};
        const int h4[4] = {ZST, ZST, ZST, ZST};
        seed_dir(k++, 1, f4, mixed, h4);
    }

    const sive_checkpoint_meta m1 = {1, 2, 3.0, 4.0},
                               m2 = {-5, 0xfeedfacecafebeefull, NAN, 0.125};
    buf ck[4] = {checkpoint(3, 4, 3, 2, &m1, 0), checkpoint(4, 3, 3, 2, NULL, 0),
                 checkpoint(16, 8, 8, 10, &m2, 1), checkpoint(2, 2, 2, 2, &m1, 1)};
    for (int i = 0; i < 4; i++)
        save("fuzz_checkpoint", i, &ck[i]);
    k = 0;
    for (int i = 0; i < 4; i++) {
        buf pl = {0};
        unsigned long long n = ZSTD_getFrameContentSize(ck[i].p, ck[i].n - 20);
        if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR)
            die("checkpoint frame");
        uint8_t *dec = malloc(n);
        if (ZSTD_decompress(dec, n, ck[i].p, ck[i].n - 20) != n)
            die("checkpoint payload");
        for (int mode = 0; mode < 16; mode++) {
            if (i > 0 && mode != 0 && mode != 3 && mode != 7 && mode != 15)
                continue;
            pl.n = 0;
            uint8_t m = (uint8_t)mode;
            put(&pl, &m, 1);
            put(&pl, dec, n);
            save("fuzz_checkpoint_reframed", k++, &pl);
        }
        free(dec);
        free(pl.p);
        free(ck[i].p);
    }

    k = 0;
    result_seed(&k, 2, 0, 0, 0.05, 0, 0, 0, "");         /* a whole run */
    result_seed(&k, 3, 1, 3, 0.05, 0, 0, 0, "part 1:3"); /* a chain range */
    result_seed(&k, 1, 0, 0, 0.5, 2, 0, 0, "diverged");  /* every chain diverges */
    result_seed(&k, 2, 0, 0, 0.05, 0, 1, 0, "cancelled"); /* stopped at step 6 */
    result_seed(&k, 2, 1, 2, 0.05, 1, 0, 0, "callback"); /* a callback error */
    result_seed(&k, 3, 1, 3, 0.05, 0, 0, 1, "refined");  /* params and a view */
    result_seed(&k, 2, 0, 0, 0.05, 0, 0, 2, "refined cv"); /* the view's VIEWCV */

    /* fuzz_options: the option's index in the table, then its text */
    {
        static const char *const seeds[][2] = {
            {"steps", "1000"}, {"seed", "-12"}, {"metropolis", "AuTo"}, {"c_h", "auto"},
            {"anchor", "nan"}, {"t", "1e4"}, {"base_lr", ".05"}, {"burn_in", "0.3"},
            {"h", "5."}, {"chains", "+4"}, {"seed", "18446744073709551615"},
            {"seed", "18446744073709551616"}};
        k = 0;
        for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
            sive_option o;
            uint8_t at = 0;
            if (sive_option_by_name(seeds[i][0], &o))
                die(seeds[i][0]);
            while (sive_option_at(at)->id != o)
                at++;
            buf t = {0};
            put(&t, &at, 1);
            put(&t, seeds[i][1], strlen(seeds[i][1]));
            save("fuzz_options", k++, &t);
            free(t.p);
        }
    }

    pair *ps[] = {&a, &b, &c, &d, &tr, &te};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        free(ps[i]->img.p);
        free(ps[i]->lab.p);
    }
    sive_dataset_free(all);
    return 0;
}
