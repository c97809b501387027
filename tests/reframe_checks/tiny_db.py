"""Test-only check (not part of the suite): logs fixed iob_* fields through the real ReFrame logging
and results DB, for tests/test_postprocess_reframe.py and test_results_db_e2e.py. Run with
`-c tests/reframe_checks/tiny_db.py`."""
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function, sanity_function, variable


@rfm.simple_test
class TinyDBCheck(rfm.RunOnlyRegressionTest):
    """Test-only: logs fixed iob_* fields through the real ReFrame logging and results DB."""
    valid_systems = ['*']
    valid_prog_environs = ['*']
    executable = 'echo'
    executable_opts = ['write_bw=100']
    iob_params = variable(str, value='backend=posix,mode=fpp,pattern=benchio,ranks=2,size=8,stripe=default')
    iob_reps = variable(str, value='write=1048576:0.01,1048576:0.02;read=1048576:0.005')
    iob_provenance = variable(str, value='{"sync_method":"fsync"}')

    @sanity_function
    def ok(self):
        return sn.assert_found('write_bw', self.stdout)

    @performance_function('MiB/s')
    def write_bw(self):
        return sn.extractsingle(r'write_bw=(\S+)', self.stdout, 1, float)
