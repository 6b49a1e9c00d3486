/* The public headers compile cleanly as strict C11 on their own. */
#include <sive/sive.h>
#include <sive/data.h>
#include <sive/mlp.h>

int main(void) { return sive_version_number() == SIVE_VERSION_NUMBER ? 0 : 1; }
