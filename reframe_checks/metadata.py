"""Metadata stress. Parameters only; IOBenchBase does the rest.

MDFiles (seed 001's 36,000 files of 300 KB, scaled): every rank creates+writes+fsyncs, stats, reads
and removes its files in one directory; reported as operations per second per phase (mdtest style).
size = files per rank (300 KB each): 20 is `quick`, 200 `nightly`. Its time is the fsync of each file's
data, so a slower metadata service hardly moves it.

MDEmptyFiles (mdtest's default, `-n N -w 0`): the same pattern with empty files (filesize=0): create+
close, stat, open+close and unlink only, no data and no fsync, so its time is metadata calls. size =
files per rank: 5000, `quick` (0.1-1.5 s create, 20-50 ms open+close here; no `nightly` size yet: it
would take archer2:compute and jureca-dc:dc-cpu-spack past their budgets, docs/site.md). Its `write`
series is the create phase, its `read` series the open+close phase (ops/s: docs/CONTRACT.md §3).
It runs as 8 iobench processes, each in its own directory, their repetitions one measurement
(iobench_lib/processes.py): the rate moved 9-17 % from one process to the next here, 0-3 % from
one round of them to the next, so one process's rate is mostly that
process's luck; a machine state that outlasts the check is the night's.

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


@rfm.simple_test
class MDEmptyFiles(IOBenchBase):
    pattern = 'mdfiles'
    io = parameter(['posix:fpp'], type=str)
    size = parameter([5000], type=int)
    quick_max_size = 10000
    params = {'filesize': '0'}
    stripe = parameter(['default'], type=str)   # empty files: no stripe to choose
    processes = 8
    # Darshan keeps one POSIX record per file: 5000 a rank in each of 5 repetitions (25000) is
    # more than the default 16384 ("ran out of record memory"); 65536 leaves room for --repeat.
    darshan_max_records = 65536
