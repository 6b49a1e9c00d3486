/* The public headers compile cleanly as strict C11 on their own (built,
 * not run: the model struct and its initialiser are used so that their
 * declarations are checked too).  With the experimental tier: header_cxx
 * checks the headers without it. */
#define SIVE_EXPERIMENTAL
#include <sive/sive.h>
#include <sive/data.h>
#include <sive/mlp.h>
#include <sive/dln.h>
#include <sive/experimental.h>

int main(void)
{
    sive_model m;
    if (sive_model_init(&m, sizeof m) != SIVE_OK)
        return 1;
    m.dtype = SIVE_F32;
    return sive_version_number() == SIVE_VERSION_NUMBER ? 0 : 1;
}
