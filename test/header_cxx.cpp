// The public headers compile cleanly as C++11 and link from C++.
#include <sive/sive.h>
#include <sive/data.h>
#include <sive/mlp.h>

int main()
{
    sive_probe *p = nullptr;
    int rc = sive_probe_new(&p, 3);
    sive_probe_free(p);
    return rc == SIVE_OK ? 0 : 1;
}
