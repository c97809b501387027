/* The backend table: one line per backend. Optional ones exist only when CMake found their library. */
#include <string.h>
#include "iobench.h"

extern const iob_backend iob_backend_posix, iob_backend_mpiio;
#ifdef IOB_HAVE_HDF5
extern const iob_backend iob_backend_hdf5;
#endif
#ifdef IOB_HAVE_ADIOS2
extern const iob_backend iob_backend_adios2;
#endif
#ifdef IOB_HAVE_SIONLIB
extern const iob_backend iob_backend_sionlib;
#endif

const iob_backend *const iob_backends[] = {
    &iob_backend_posix,
    &iob_backend_mpiio,
#ifdef IOB_HAVE_HDF5
    &iob_backend_hdf5,
#endif
#ifdef IOB_HAVE_ADIOS2
    &iob_backend_adios2,
#endif
#ifdef IOB_HAVE_SIONLIB
    &iob_backend_sionlib,
#endif
    NULL,
};

const iob_backend *iob_find_backend(const char *name)
{
    for (int i = 0; iob_backends[i]; i++)
        if (strcmp(iob_backends[i]->name, name) == 0)
            return iob_backends[i];
    return NULL;
}
