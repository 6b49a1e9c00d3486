/* --params: which parameters a weight-restricted probe moves, as text.
 * A comma-separated list of items, each an index range A:B (half-open), an
 * index A, or a named block of the reference MLP (sive_mlp_param_range():
 * 1.weight, 1.bias, ..., or layer1, layer2, layer3); the items are sorted and
 * merged into the library's ascending ranges (sive_probe_set_params()). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int by_begin(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* One item into r[0..1]; 0, or -1 with a message in err. */
static int item(const char *s, size_t len, const sive_mlp *m, uint64_t *r, char *err,
                size_t errlen)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf) {
        snprintf(err, errlen, "--params: empty or overlong item");
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (buf[0] >= '0' && buf[0] <= '9' && strpbrk(buf, ".") == NULL) {
        char *end = NULL;
        errno = 0;
        unsigned long long a = strtoull(buf, &end, 10), b = a + 1;
        if (!errno && *end == ':')
            b = strtoull(end + 1, &end, 10);
        if (errno || *end || b <= a) {
            snprintf(err, errlen, "--params: '%s' is not an index A or a range A:B with A < B",
                     buf);
            return -1;
        }
        r[0] = a;
        r[1] = b;
        return 0;
    }
    if (!m || sive_mlp_param_range(m, buf, &r[0], &r[1])) {
        snprintf(err, errlen, "--params: %s",
                 m ? sive_last_errmsg() : "names need the reference MLP; give A:B ranges");
        return -1;
    }
    return 0;
}

int params_spec_ranges(const char *spec, const sive_mlp *m, uint64_t **ranges, size_t *n,
                       char *err, size_t errlen)
{
    size_t cap = 1;
    for (const char *q = spec; *q; q++)
        cap += *q == ',';
    uint64_t *r = malloc(2 * cap * sizeof *r);
    if (!r) {
        snprintf(err, errlen, "--params: out of memory");
        return -1;
    }
    size_t k = 0;
    for (const char *s = spec;; k++) {
        size_t len = strcspn(s, ",");
        if (item(s, len, m, r + 2 * k, err, errlen)) {
            free(r);
            return -1;
        }
        if (!s[len])
            break;
        s += len + 1;
    }
    k++;
    qsort(r, k, 2 * sizeof *r, by_begin);
    size_t j = 0; /* merge overlapping and touching ranges */
    for (size_t i = 1; i < k; i++) {
        if (r[2 * i] <= r[2 * j + 1]) {
            if (r[2 * i + 1] > r[2 * j + 1])
                r[2 * j + 1] = r[2 * i + 1];
        } else {
            j++;
            r[2 * j] = r[2 * i];
            r[2 * j + 1] = r[2 * i + 1];
        }
    }
    *ranges = r;
    *n = j + 1;
    return 0;
}
