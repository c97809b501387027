"""End to end: real `ci/nightly.sh` runs of quick-suite checks on re-dated nights, then iobench made
~20 % slower by tests/support/iofault.c (an LD_PRELOAD library built here with cc; fio untouched) for two
nights, in two scenarios sharing the clean nights (tests/support/nights.py, as bench/real_replay.py):

* every iobench write and sync +25 % time: both slowed nights red with ONE I/O-stack (or
  system-wide) write finding, confirmed by the re-run, the second night `since` the first;
* only writes to HDF5 files: both slowed nights red with the HDF5 checks' group finding (or only
  HDF5 write series), confirmed, `since` the first slowed night;

and the clean nights green (exit 0; "watching" and unconfirmed lines allowed, never red).

Opt-in (`-m slow`, ~6 min on a quiet 2-core VM): nine nightly runs, and a ~20 % fault is within
this VM's night-to-night spread whenever other jobs share it (load 12-16 with 25 % steal this
session: the write factor then moves +-30 % between clean nights, and no test of two nights can
tell -20 % from that). Run it on a quiet machine; bench/real_replay.py is the measurement.
"""
import shutil

import pytest

from tests.support import nights


pytestmark = [pytest.mark.reframe, pytest.mark.slow]

# The quick suite's bandwidth-bound BenchIO checks (n=256: 0.2-0.5 s phases, what the stack
# factor and a group are read on, docs/verdicts.md §3) of POSIX, MPI-IO and HDF5 at 1-2 ranks: 3
# HDF5 and 7 others, so the HDF5 group and the factor are each estimable without the other; two
# short HaccHDF5 checks (judged as series, not the basis); fio, the filesystem's own reading
CHECKS = ['BenchIO.*size=256.*(posix|mpiio|hdf5):', 'HaccHDF5.*layout=individual', 'BaselineFio']
CLEAN = 5


def red(outcome):
    return [f for f in (outcome['verdict'] or {}).get('findings', [])
            if f['status'] == 'regression']


# Issue 18 (open): its acceptance, met on real nights in one replay of two (docs/verdicts.md,
# run 10): when the stack's level wanders 8 % between clean nights (run 10.2) a -20 % fault reaches
# p 0.01-0.04, short of alpha_system. Run in CI and reported (XPASS when it holds), not allowed to
# turn the build red: issue 18 is blocked on this VM (docs/reach.md, docs/replays-runs32.md).
@pytest.mark.xfail(strict=False, reason='issue 18 blocked here: a -20 % fault is found on real nights when '
                   'the stack level is steady (run 10.1), not when it wanders 8 % (run 10.2)')
def test_real_sized_faults_named_on_both_slowed_nights_green_otherwise(tmp_path):
    if not shutil.which('cc'):
        pytest.skip('no C compiler (cc) for the fault library')
    lib = nights.build_fault_lib(tmp_path)
    clean_tree = tmp_path / 'clean'
    clean = [nights.run_night(clean_tree, i, CHECKS, timeout=1200) for i in range(CLEAN)]
    for i, night in enumerate(clean):
        assert night['exit'] == 0, (i, night['out'])
        assert night['verdict'] is None or night['verdict']['status'] == 'ok', night['out']
    first_slow = nights.night_of(CLEAN)
    for fault in ('write', 'hdf5'):
        tree = tmp_path / fault
        shutil.copytree(clean_tree / 'perflogs', tree / 'perflogs')
        for i in (CLEAN, CLEAN + 1):
            night = nights.run_night(tree, i, CHECKS, fault=fault, lib=lib, timeout=1200)
            out = f"{fault} night {i + 1}: {night['out']}"
            assert night['exit'] == 3, out
            assert night['verdict']['confirmation'] == 'done', out
            found = red(night)
            if fault == 'write':
                right = [f for f in found if f['scope'] in ('stack', 'system')
                         and f['phase'] == 'write']
            else:
                right = [f for f in found if f['scope'] == 'group'
                         and f['params'] == 'backend=hdf5' and f['phase'] == 'write']
                right = right or [f for f in found if 'backend=hdf5' in f['params']]
                assert right and all('backend=hdf5' in f['params'] or f['scope'] != 'series'
                                     for f in found), out
            assert right, out
            assert all(f.get('confirmation') == 'confirmed' for f in right), out
            assert all(f['since'] == first_slow for f in right), out
            assert 'FAILED: performance regression detected' in night['out'], out
