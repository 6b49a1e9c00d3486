/* Runs test/compat02.h's cases through libsive 0.2.0 and writes, into
 * DIR, compat02_<case>.sres (sive_result_save) and compat02_stats.txt:
 * one line "case stat chain value" (value "%a"; chain -1 the summary) per
 * statistic of 0.2 and chain of the case's range.  Not built: it made
 * test/data/compat02_* once, against 0.2.0 (commit 4934e44) built in
 * V02 = an extracted copy (git archive 4934e44):
 *   cc -O2 -std=c11 -IV02/include -IV02/build/include -Itest \
 *      test/compat02_gen.c -LV02/build/lib -lsive -lm -o gen02
 *   LD_LIBRARY_PATH=V02/build/lib ./gen02 test/data */
#include "compat02.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    quad_fixture q = {.k = 1.0, .l0 = 1.0, .sigma = 0.01};
    char path[4096];
    snprintf(path, sizeof path, "%s/compat02_stats.txt", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "# libsive %s: statistics of test/compat02.h's cases (chain -1: summary)\n",
            sive_version_string());
    for (size_t i = 0; i < C02_CASES; i++) {
        const c02_case *c = &c02_cases[i];
        sive_result *r = NULL;
        if (c02_run(c, &q, &r) || sive_result_status(r) != SIVE_OK) {
            fprintf(stderr, "%s: %s\n", c->name, sive_last_errmsg());
            return 1;
        }
        snprintf(path, sizeof path, "%s/compat02_%s.sres", argv[1], c->name);
        if (sive_result_save(r, path, c->name))
            return 1;
        int32_t begin = 0, end = 0;
        sive_result_chain_range(r, &begin, &end);
        for (int s = 0; sive_stat_name((sive_stat)s); s++)
            for (int32_t ch = -1; ch < end; ch++) {
                if (ch >= 0 && ch < begin)
                    continue;
                fprintf(f, "%s %s %d %a\n", c->name, sive_stat_name((sive_stat)s), (int)ch,
                        sive_result_stat(r, (sive_stat)s, ch));
            }
        sive_result_free(r);
    }
    return fclose(f) ? 1 : 0;
}
