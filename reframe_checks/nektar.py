"""Nektar++-style checkpoint (seed 000): elements with IDs and variable-length coefficient lists,
unequal per rank, with field definitions and a decomposition dataset written by rank 0.
File per process (posix fpp, like FieldIOXml), one shared HDF5 file (FieldIOHdf5), SIONlib and
ADIOS2 containers. Parameters only; IOBenchBase does the rest. size = total elements.
"""
import reframe as rfm
from reframe.core.builtins import parameter

from iobench_lib.base import IOBenchBase


class NektarBase(IOBenchBase):
    pattern = 'nektar'
    io = parameter(['posix:fpp', 'hdf5:independent', 'hdf5:collective', 'sionlib:collective',
                    'sionlib:collectivemerge', 'adios2:bp5'], type=str)


@rfm.simple_test
class NektarSmall(NektarBase):
    """The aorta case: about 2.4 MB in total, 1-3 coefficients per element: metadata-bound (quick)."""
    size = parameter([100000], type=int)
    stripe = parameter(['default'], type=str)   # 2.4 MB, metadata-bound: striping tells nothing
    params = {'case': 'small'}
    quick_max_size = 100000


@rfm.simple_test
class NektarLarge(NektarBase):
    """The racing-car case scaled to one node: about 250 MB, ~196 coefficients per element (nightly)."""
    size = parameter([160000], type=int)
    params = {'case': 'large'}
    quick_max_size = 0
