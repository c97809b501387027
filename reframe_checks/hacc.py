"""HACC-IO (seed 004): 9 particle variables per rank (id, mask, x, y, z, vx, vy, vz, phi; doubles)
written in the layouts the seed compares. Parameters only; IOBenchBase does the rest.

size = particles per rank: 10,000 (0.7 MB per rank) is the `quick` suite, 1,000,000 (72 MB per rank,
the seed's 8 MB per variable scaled) `nightly`. The layout reaches iobench as --param layout=...
"""
import reframe as rfm
from reframe.core.builtins import parameter

from iobench_lib.base import IOBenchBase


class HaccBase(IOBenchBase):
    pattern = 'hacc'
    size = parameter([10000, 1000000], type=int)
    quick_max_size = 100000
    param_parameters = ['layout']


@rfm.simple_test
class HaccMPIIO(HaccBase):
    """MPI Interleaved (each rank's 9 blocks follow each other) vs MPI Contiguous (variable after
    variable across ranks), independent and collective, and the same through POSIX pwrite."""
    io = parameter(['mpiio:independent', 'mpiio:collective', 'posix:shared'], type=str)
    layout = parameter(['interleaved', 'contiguous'], type=str)


@rfm.simple_test
class HaccHDF5(HaccBase):
    """HDF5 Individual (9 datasets), Multi (one dataset, the interleaved layout) and Compound
    (one dataset of a 9-field compound type)."""
    io = parameter(['hdf5:independent', 'hdf5:collective'], type=str)
    layout = parameter(['individual', 'multi', 'compound'], type=str)
    stripe = parameter(['default'], type=str)   # the HDF5 layouts compared; HaccMPIIO sweeps stripes


@rfm.simple_test
class HaccHDF5Tuned(HaccBase):
    """The seed's HDF5 tuning (nightly): an 8 MiB metadata block (H5Pset_meta_block_size) and
    datasets aligned to 1 MiB (H5Pset_alignment), against HaccHDF5's defaults."""
    io = parameter(['hdf5:independent', 'hdf5:collective'], type=str)
    layout = parameter(['individual', 'multi'], type=str)
    size = parameter([1000000], type=int)
    meta_block_size = parameter([8388608], type=int)
    alignment = parameter(['0,1048576'], type=str)
    stripe = parameter(['default'], type=str)   # aligned to the default 1 MiB stripe size
    param_parameters = ['layout', 'meta_block_size', 'alignment']
