/* The model description's two helpers: initialise and release. */
#include "internal.h"

#include <string.h>

int sive_model_init(sive_model *m, size_t struct_size)
{
    if (!m || !sivei_model_size_ok(struct_size))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_model_init: model NULL or struct_size %zu not the size "
                         "of a sive_model", struct_size);
    /* only the caller's own bytes: an older caller's struct is smaller */
    memset(m, 0, struct_size < sizeof *m ? struct_size : sizeof *m);
    m->struct_size = (uint32_t)struct_size;
    return SIVE_OK;
}

void sive_model_destroy(sive_model *m)
{
    if (!m || !sivei_model_size_ok(m->struct_size))
        return;
    if (m->destroy)
        m->destroy(m->user);
    uint32_t size = m->struct_size;
    memset(m, 0, size < sizeof *m ? size : sizeof *m);
    m->struct_size = size;
}
