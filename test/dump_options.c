/* The library's option table as text, one option a line, for
 * test/check_option_docs.py (which checks the hand-written option lists
 * of the docs and bindings against it):
 *   id name type lo hi lo_open hi_open default tier
 * type "int" or "double"; int values exact, doubles as %.17g; tier 0
 * stable, 1 experimental. */
#include <sive/sive.h>

#include <stdio.h>

int main(void)
{
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        if (in->type == SIVE_TYPE_INT)
            printf("%d %s int %lld %lld %d %d %lld %d\n", (int)in->id, in->name,
                   (long long)in->int_lo, (long long)in->int_hi, in->lo_open, in->hi_open,
                   (long long)in->int_default, (int)in->tier);
        else
            printf("%d %s double %.17g %.17g %d %d %.17g %d\n", (int)in->id, in->name,
                   in->double_lo, in->double_hi, in->lo_open, in->hi_open,
                   in->double_default, (int)in->tier);
    }
    return 0;
}
