"""Test-only check (not part of the suite): a measurement over 3 iobench processes whose third
result document is lost after the run, as a process killed before writing it would lose it.
Used by tests/test_processes.py; run with `-c tests/reframe_checks/lost_process.py`."""
import reframe as rfm
from reframe.core.builtins import parameter, run_before

from iobench_lib import processes
from iobench_lib.base import IOBenchBase


@rfm.simple_test
class LostProcess(IOBenchBase):
    pattern = 'mdfiles'
    io = parameter(['posix:fpp'], type=str)
    size = parameter([200], type=int)
    stripe = parameter(['default'], type=str)
    params = {'filesize': '0'}
    processes = 3
    repeat = 2

    @run_before('run')
    def lose_the_last_document(self):
        # postrun: the extra launches come first (base.py), then this
        self.postrun_cmds = self.postrun_cmds + [f'rm -f {processes.json_name(2)}']
