"""benchio: a 3-D block of doubles per rank written and read back through each I/O library.

Parameters only; IOBenchBase (iobench_lib/base.py) does build, run, sanity and performance.
The `quick` suite runs 5 repetitions, `nightly` 10. (size, ranks) come in shapes per suite from
the partitions' extras 'benchio_shapes', which also say which suite a pair is in
(iobench_lib/matrix.py): quick 1 and 2 ranks on `local` (a rank series for the report), nightly
at rank counts that decompose in 3-D (8 ranks on `local`, one full node on the sites), so the
nightly exercises the 3-D decomposition, two-phase aggregation and lock contention. Stripes from
the partition's menu run at the nightly shape only.
"""
import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, variable

from iobench_lib import matrix
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
    size = parameter(matrix.size_menu(), type=int)
    ranks = parameter(matrix.rank_menu(), type=int)
    stripe = parameter(stripe_menu(), type=str)   # the selected system's stripe menus
    #: The quick suite's smaller rank counts (the rank series) run for these modes only: enough
    #: lines for "bandwidth vs ranks", and the quick suite stays quick.
    series_io = variable(typ.List[str], value=['posix:fpp', 'posix:shared', 'mpiio:collective',
                                               'hdf5:collective'])

    def suite_of(self):
        return matrix.suite_of(self.size, self.ranks) or super().suite_of()

    @run_after('init')
    def drop_unlisted_shape(self):
        self.skip_if(matrix.dropped(self.iob_suite, self.size, self.ranks),
                     f'size={self.size} ranks={self.ranks}: no {self.iob_suite} shape of this system')
        self.skip_if(self.iob_suite == 'quick' and self.io not in self.series_io
                     and self.ranks < matrix.largest_quick_ranks(),
                     f'io={self.io} ranks={self.ranks}: the quick rank series is {self.series_io}')

    @run_after('setup')
    def skip_shape_not_here(self):
        reason = matrix.shape_skip_reason(self.current_partition, self.iob_suite, self.size, self.ranks)
        self.skip_if(reason is not None, reason)
