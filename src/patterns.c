/* The workload table: one line per pattern. */
#include <stdlib.h>
#include <string.h>
#include "iobench.h"

extern const iob_pattern iob_pattern_benchio;
extern const iob_pattern iob_pattern_hacc, iob_pattern_nektar, iob_pattern_mdfiles, iob_pattern_ior;
#ifdef IOB_HAVE_HDF5
extern const iob_pattern iob_pattern_mddatasets;
#endif

const iob_pattern *const iob_patterns[] = {
    &iob_pattern_benchio,
    &iob_pattern_hacc,
    &iob_pattern_nektar,
    &iob_pattern_mdfiles,
    &iob_pattern_ior,
#ifdef IOB_HAVE_HDF5
    &iob_pattern_mddatasets,
#endif
    NULL,
};

const iob_pattern *iob_find_pattern(const char *name)
{
    for (int i = 0; iob_patterns[i]; i++)
        if (strcmp(iob_patterns[i]->name, name) == 0)
            return iob_patterns[i];
    return NULL;
}

void iob_pattern_release(iob_ctx *c)
{
    free(c->pattern_state);
    free(c->vars);
    c->pattern_state = NULL;
    c->vars = NULL;
    c->nvars = 0;
}
