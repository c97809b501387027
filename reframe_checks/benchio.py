"""benchio: a 3-D block of doubles per rank written and read back through each I/O library.

Parameters only; IOBenchBase (iobench_lib/base.py) does build, run, sanity and performance.
Sizes <= 64 form the `quick` suite (3 repetitions), larger ones `nightly` (10 repetitions).
"""
import reframe as rfm
from reframe.core.builtins import parameter

from iobench_lib.base import IOBenchBase
from iobench_lib.lustre import stripe_menu


@rfm.simple_test
class BenchIO(IOBenchBase):
    io = parameter([
        'posix:fpp', 'posix:shared',
        'mpiio:independent', 'mpiio:collective',
        'hdf5:independent', 'hdf5:collective',
        'adios2:bp5', 'adios2:bp4', 'adios2:hdf5',
        'sionlib:independent', 'sionlib:collective', 'sionlib:collectivemerge',
    ], type=str)
    size = parameter([64, 256, 512], type=int)
    ranks = parameter([2], type=int)
    stripe = parameter(stripe_menu(), type=str)   # the selected system's stripe menus
