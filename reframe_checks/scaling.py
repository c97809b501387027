"""Rank scaling: benchio and the IOR layout (iobench --pattern ior) at every rank count the
partition lists in its extras 'rank_counts' (configs/systems/*.py: 1 and 2 ranks on `local`, 1, 2,
4, 8 nodes on the sites), so "bandwidth vs ranks" is drawn from real runs. Tags: scaling and
nightly (the quick suite keeps BenchIO's one rank count). A rank count the partition does not list
is skipped with the reason (iobench_lib/scaling.py). Parameters only; IOBenchBase does the rest.

Sizes stay fixed per rank (weak scaling): benchio n=64 (2 MiB per rank), ior block 16 MiB x 2
segments in 1 MiB transfers; a site widens them with -P size=...
"""
import reframe as rfm
from reframe.core.builtins import parameter, run_after

from iobench_lib import matrix
from iobench_lib.base import IOBenchBase
from iobench_lib.scaling import rank_menu, rank_skip_reason

# One series per library's main path (BenchIO's nightly covers every mode at one node): scaling
# x stripes x modes would be the unbounded matrix docs/site.md "Nightly budget" replaced.
SCALING_IO = ['posix:fpp', 'posix:shared', 'mpiio:independent', 'mpiio:collective',
              'hdf5:collective', 'adios2:bp5', 'sionlib:collective']
# The layouts IOR itself has (-a POSIX [-F], MPIIO [-c], HDF5 -c): what IORCompare pairs against.
IOR_IO = ['posix:fpp', 'posix:shared', 'mpiio:independent', 'mpiio:collective', 'hdf5:collective']


class ScalingBase(IOBenchBase):
    io = parameter(SCALING_IO, type=str)
    ranks = parameter(rank_menu(), type=int)
    #: extras 'scaling_stripes' (iobench_lib/matrix.py): on +lustre partitions the default
    #: (one OST on ARCHER2) and all OSTs, so scaling is not one OST's bandwidth; else 'default'.
    stripe = parameter(matrix.scaling_stripe_menu(), type=str)
    stripes_at_quick = True

    @run_after('init')
    def scaling_tags(self):
        self.tags = (self.tags - {'quick'}) | {'nightly', 'scaling'}

    @run_after('setup')
    def skip_unlisted_rank_count(self):
        reason = rank_skip_reason(self.current_partition, self.ranks)
        self.skip_if(reason is not None, reason)
        stripes = matrix.scaling_stripes_of(self.current_partition.extras)
        self.skip_if(self.stripe not in stripes,
                     f'stripe {self.stripe} is not in the scaling_stripes {stripes} of '
                     f'{self.current_partition.fullname} (extras)')


@rfm.simple_test
class BenchIOScaling(ScalingBase):
    size = parameter([64], type=int)


@rfm.simple_test
class IORScaling(ScalingBase):
    io = parameter(IOR_IO, type=str)
    pattern = 'ior'
    size = parameter([16], type=int)              # block MiB per rank and segment (IOR -b)
    params = {'transfer': '1m', 'segments': '2'}  # IOR -t, -s
