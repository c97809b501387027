/* The workload table: one line per pattern. */
#include <string.h>
#include "iobench.h"

extern const iob_pattern iob_pattern_benchio;

const iob_pattern *const iob_patterns[] = {
    &iob_pattern_benchio,
    NULL,
};

const iob_pattern *iob_find_pattern(const char *name)
{
    for (int i = 0; iob_patterns[i]; i++)
        if (strcmp(iob_patterns[i]->name, name) == 0)
            return iob_patterns[i];
    return NULL;
}
