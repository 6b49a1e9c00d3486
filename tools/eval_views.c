/* --eval-data: evaluation views of `sive probe` (data-refined probes,
 * sive_probe_add_eval_view()).  A view is a data set, "train" or "test",
 * optionally one class of it ("test:class=3"; "class=3" is the training
 * set's); each is added for every checkpoint, on that checkpoint's MLP. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* The parts of a spec: which set (0 train, 1 test) and the class (-1:
 * all); 0, or -1 with a message. */
static int spec_parse(const char *spec, int *test, int *cls, char *err, size_t errlen)
{
    const char *rest = spec;
    *test = 0;
    *cls = -1;
    if (!strncmp(rest, "test", 4) && (rest[4] == '\0' || rest[4] == ':'))
        *test = 1, rest += 4;
    else if (!strncmp(rest, "train", 5) && (rest[5] == '\0' || rest[5] == ':'))
        rest += 5;
    if (rest != spec && *rest == ':')
        rest++;
    else if (rest != spec && *rest == '\0')
        return 0;
    char *end = NULL;
    if (!strncmp(rest, "class=", 6)) {
        long k = strtol(rest + 6, &end, 10);
        if (end != rest + 6 && *end == '\0' && k >= 0 && k <= 255) {
            *cls = (int)k;
            return 0;
        }
    }
    snprintf(err, errlen, "--eval-data: '%s' is not train, test, class=K, train:class=K or "
             "test:class=K", spec);
    return -1;
}

int eval_spec_check(const char *spec, char *err, size_t errlen)
{
    int test, cls;
    return spec_parse(spec, &test, &cls, err, errlen);
}

void eval_views_release(eval_views *v)
{
    for (int k = 0; k < v->n; k++)
        if (v->own[k])
            sive_model_destroy(&v->model[k]);
    memset(v, 0, sizeof *v);
}

/* The examples of ds with label cls, ascending (*n of them). */
static uint64_t *class_subset(const sive_dataset *ds, int cls, size_t *n)
{
    const uint8_t *lab = sive_dataset_labels(ds);
    size_t count = sive_dataset_count(ds), k = 0;
    uint64_t *idx = malloc((count ? count : 1) * sizeof *idx);
    for (size_t i = 0; idx && i < count; i++)
        if (lab[i] == cls)
            idx[k++] = i;
    *n = k;
    return idx;
}

int eval_specs_data_check(const probe_cfg *c, char *err, size_t errlen)
{
    for (int k = 0; k < c->n_eval; k++) {
        int test, cls;
        if (spec_parse(c->eval_spec[k], &test, &cls, err, errlen))
            return -1;
        const sive_dataset *ds = test ? c->test : c->train;
        const size_t classes = sive_dataset_classes(ds);
        if (!ds || cls < 0)
            continue; /* a missing test set is the data's error, reported there */
        size_t n = 0;
        uint64_t *sub = (size_t)cls < classes ? class_subset(ds, cls, &n) : NULL;
        free(sub);
        if ((size_t)cls >= classes)
            snprintf(err, errlen, "--eval-data %s: no class %d in the %s set (its classes are "
                     "0 to %zu)", c->eval_spec[k], cls, test ? "test" : "training",
                     classes ? classes - 1 : 0);
        else if (n == 0)
            snprintf(err, errlen, "--eval-data %s: no example of class %d in the %s set",
                     c->eval_spec[k], cls, test ? "test" : "training");
        if ((size_t)cls >= classes || n == 0)
            return -1;
    }
    return 0;
}

int eval_views_add(const probe_cfg *c, const sive_mlp *m, const sive_model *train_model,
                   int blis, eval_views *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    sive_probe_clear_eval_views(c->p);
    for (int k = 0; k < c->n_eval; k++) {
        int test, cls, rc = SIVE_OK;
        spec_parse(c->eval_spec[k], &test, &cls, err, errlen);
        const sive_dataset *ds = test ? c->test : c->train;
        v->model[k] = *train_model;
        if (test) {
            sive_model_init(&v->model[k], sizeof v->model[k]);
            rc = sive_mlp_model(&v->model[k], m, ds, blis);
            v->own[k] = rc == SIVE_OK;
        }
        v->n = k + 1;
        size_t n = 0;
        uint64_t *sub = NULL;
        if (!rc && cls >= 0 && !(sub = class_subset(ds, cls, &n)))
            rc = SIVE_E_NOMEM;
        if (!rc && cls >= 0 && n == 0) {
            snprintf(err, errlen, "--eval-data %s: no example of class %d", c->eval_spec[k],
                     cls);
            free(sub);
            return SIVE_E_INVALID_ARG;
        }
        if (!rc)
            rc = sive_probe_add_eval_view(c->p, c->eval_spec[k], &v->model[k], sub, n);
        free(sub);
        if (rc) {
            snprintf(err, errlen, "--eval-data %s: %s", c->eval_spec[k],
                     test && !v->own[k] ? sive_last_errmsg() : sive_probe_errmsg(c->p));
            return rc;
        }
    }
    return SIVE_OK;
}
