"""Metadata stress. Parameters only; IOBenchBase does the rest.

MDFiles (seed 001's 36,000 files of 300 KB, scaled): every rank creates+writes+fsyncs, stats, reads
and removes its files in one directory; reported as operations per second per phase (mdtest style).
size = files per rank (300 KB each): 20 is `quick`, 200 `nightly`.

MDDatasets (seed 003, Exodus-like): one HDF5 file with 1000 datasets and 2100 attributes, collective
metadata off/on; open, define, write and close timed separately. size = doubles per rank per dataset.
"""
import reframe as rfm
from reframe.core.builtins import parameter

from iobench_lib.base import IOBenchBase


@rfm.simple_test
class MDFiles(IOBenchBase):
    pattern = 'mdfiles'
    io = parameter(['posix:fpp'], type=str)
    size = parameter([20, 200], type=int)
    stripe = parameter(['default'], type=str)   # one small file per op: striping tells nothing


@rfm.simple_test
class MDDatasets(IOBenchBase):
    pattern = 'mddatasets'
    io = parameter(['hdf5:independent', 'hdf5:collective'], type=str)
    size = parameter([16, 4096], type=int)
    coll_metadata = parameter([0, 1], type=int)
    stripe = parameter(['default'], type=str)   # metadata-bound: striping tells nothing
    param_parameters = ['coll_metadata']
