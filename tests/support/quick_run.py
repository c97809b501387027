"""The README's first command's suite step, run for real once per test session: ci/quick.sh into a
temporary results directory (ReFrame builds iobench, as on a newcomer's machine; every iobench run
captured by Darshan where setup built it; then the Darshan index, detect, the page and the verdict).
Every test that reads a quick suite's outputs reads this one run (tests/conftest.py `quick_run`)."""
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# 30 min: ~50 checks (SIONlib's among them), each captured by Darshan, then the index and the
# report; beside the other tests on 2 cores
TIMEOUT_S = 1800


def run_quick_suite(out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, IOREGRESS_RESULTS=str(out))
    env.pop('IOREGRESS_IOBENCH_DIR', None)      # the README's command: ReFrame builds iobench
    t0 = time.monotonic()
    proc = subprocess.run([str(REPO / 'ci' / 'quick.sh')], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    proc.elapsed = time.monotonic() - t0
    print(f'quick suite: {proc.elapsed:.1f} s', file=sys.stderr)
    return proc
