"""Test-only checks (not part of the suite): one MPI rank dies or hangs in the middle of a run.

Each wraps the real iobench command so that rank 1 starts iobench in the background, lets it run
for a moment and then kills it by its own PID: `kill -9` (the job must fail fast, naming the exit
status) or `kill -STOP` (the other rank blocks in MPI; ReFrame's time limit must end the job).
Used by tests/test_reframe.py; run with `-c tests/reframe_checks/rank_failure.py`.
"""
import shlex

import reframe as rfm
from reframe.core.builtins import parameter, run_before, variable

from iobench_lib.base import IOBenchBase

# $1 = signal, $2 = delay (s), rest = the iobench command line of this rank.
_WRAPPER = r'''
sig=$1; delay=$2; shift 2
if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" != 1 ]; then exec "$@"; fi
"$@" & pid=$!
sleep "$delay"
echo "rank 1: sending SIG$sig to iobench pid $pid" >&2
kill -"$sig" "$pid"
while kill -0 "$pid" 2>/dev/null; do
    [ "$sig" = STOP ] || break
    sleep 1
done
wait "$pid"
'''


@rfm.simple_test
class RankFailure(IOBenchBase):
    signal = parameter(['KILL', 'STOP'], type=str)
    io = parameter(['mpiio:collective'], type=str)
    size = parameter([200], type=int)          # 61 MiB per rank: runs for seconds, not ms
    delay = variable(float, value=1.0)
    repeat = 20
    time_limit = '20s'      # the STOP case must end here, not hang

    @run_before('run')
    def wrap_with_killer(self):
        self.executable_opts = ['-c', shlex.quote(_WRAPPER), 'rank_failure', self.signal,
                                str(self.delay), shlex.quote(self.executable),
                                *self.executable_opts]
        self.executable = 'bash'
