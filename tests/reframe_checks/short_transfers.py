"""Test-only check (not part of the suite): iobench under an LD_PRELOAD shim that changes what the
data files' write calls move or report (tests/test_counted_bytes.py builds the shim and passes it
with `-S shim=PATH -S shim_mode=MODE`). The check itself is the suite's: its sanity must name the
counted bytes that differ from what was asked. Run with `-c tests/reframe_checks/short_transfers.py`.
"""
import reframe as rfm
from reframe.core.builtins import parameter, run_before, variable

from iobench_lib.base import IOBenchBase


@rfm.simple_test
class ShortTransfers(IOBenchBase):
    io = parameter(['posix:fpp', 'mpiio:independent'], type=str)
    size = parameter([1], type=int)             # pattern ior: 1 MiB block per rank
    pattern = 'ior'
    repeat = 1
    time_limit = '60s'
    shim = variable(str, value='')
    shim_mode = variable(str, value='short')

    @run_before('run')
    def preload_shim(self):
        # data files are named after the check (iobench --name): the shim touches only those
        self.env_vars.update({'LD_PRELOAD': self.shim, 'IOB_SHIM_MODE': self.shim_mode,
                              'IOB_SHIM_MATCH': '.rep0'})
