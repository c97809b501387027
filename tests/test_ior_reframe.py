"""ReFrame side of issue 12: the IOR comparison check (reframe_checks/ior_compare.py) and the rank
scaling checks (reframe_checks/scaling.py), run for real on `local` like tests/test_reframe.py.

Without IOR the comparison must skip with its reason; with one (IOR_ROOT, which tests/conftest.py
sets to ci/build_ior.sh's build, or PATH) both tools land in the perflog as their own series.
`--tag scaling` sweeps local's rank_counts (1, 2).
"""
import os
import re
import shutil
import subprocess

import pytest

from iobench_lib import ior_pairs, scaling
from tests.support.launch import ior_binary
from tests.support.reframe_runs import CHECKS, reframe, report_cases

pytestmark = pytest.mark.reframe


def _without_ior(monkeypatch):
    monkeypatch.delenv('IOR_ROOT', raising=False)
    keep = [d for d in os.environ.get('PATH', '').split(os.pathsep)
            if d and not os.access(os.path.join(d, 'ior'), os.X_OK)]
    monkeypatch.setenv('PATH', os.pathsep.join(keep))


def test_ior_check_skips_with_reason_without_ior(tmp_path, monkeypatch):
    _without_ior(monkeypatch)
    proc = reframe(tmp_path / 'rf', '-c', os.path.join(CHECKS, 'ior_compare.py'), '-r',
                   '-n', 'IORCompare.*io=posix:fpp')
    assert proc.returncode == 0, proc.output[-3000:]
    cases = [c for c in report_cases(tmp_path / 'rf') if not c['name'].startswith('IOBenchBuild')]
    assert cases and all(c['result'] == 'skip' for c in cases), [(c['name'], c['result']) for c in cases]
    reasons = re.findall(r'SKIP.*IORPairs.*\[(.*)\]', proc.stdout)
    assert reasons and all(r.startswith('no IOR binary: not on PATH, $IOR_ROOT unset') for r in reasons)
    assert 'skipped due to skipped dependencies' in proc.stdout


def test_ior_root_without_binary_names_it(tmp_path, monkeypatch):
    _without_ior(monkeypatch)
    monkeypatch.setenv('IOR_ROOT', str(tmp_path / 'nothing'))
    path, why = ior_pairs.find_ior({})
    assert path is None and '$IOR_ROOT' in why and 'nothing/bin/ior' in why
    assert ior_pairs.find_ior({'ior': '/bin/sh'}) == ('/bin/sh', "environment extras 'ior'")


@pytest.mark.skipif(ior_binary() is None, reason='no IOR binary (IOR_ROOT or ior on PATH)')
def test_ior_check_logs_both_tools_as_own_series(tmp_path, monkeypatch):
    if not os.environ.get('IOR_ROOT'):
        monkeypatch.setenv('IOR_ROOT', os.path.dirname(os.path.dirname(ior_binary())))
    proc = reframe(tmp_path / 'rf', '-c', os.path.join(CHECKS, 'ior_compare.py'), '-r',
                   '-n', 'IORCompare.*io=mpiio:collective.*ranks=2', '-S', 'IORPairs.size=2')
    assert proc.returncode == 0, proc.output[-3000:]
    log = (tmp_path / 'rf' / 'perflogs' / 'local' / 'default' / 'IORCompare.log').read_text()
    lines = log.splitlines()[1:]
    params = sorted(ln.split('|')[6] for ln in lines)
    assert params == [f'backend=mpiio,block=2m,mode=collective,pattern=ior,ranks=2,segments=2,size=2,'
                      f'stripe=default,tool={t},transfer=1m' for t in ('iobench', 'ior')], params
    for ln in lines:
        reps = ln.split('|')[9]
        assert reps.count(':') == 6          # 3 pairs x write and read, bytes:seconds each
        assert 'write_bw=' in ln and 'read_bw=' in ln
    assert all('write_ratio_iobench_ior=' in ln for ln in lines)
    from postprocess.history.perflog import read_perflogs
    from postprocess.history.store import History
    from postprocess.report.ior_ratio import ior_ratios
    rows = ior_ratios(History(read_perflogs([str(tmp_path / 'rf' / 'perflogs')])[0]))
    assert [(r['api'], r['mode'], r['ranks'], r['phase'], r['pairs'], r['paired']) for r in rows] == [
        ('mpiio', 'collective', 2, 'write', 3, True), ('mpiio', 'collective', 2, 'read', 3, True)]


def test_scaling_tag_sweeps_local_rank_counts(tmp_path):
    proc = reframe(tmp_path / 'rf', '-c', CHECKS, '-l', '--tag', 'scaling')
    assert proc.returncode == 0, proc.output[-3000:]
    listed = [ln for ln in proc.stdout.splitlines() if ln.startswith('- ')]
    for check in ('BenchIOScaling', 'IORScaling'):
        for io in ('posix:fpp', 'mpiio:collective'):
            ranks = {int(m) for ln in listed if ln.startswith(f'- {check} ') and f'%io={io} ' in ln
                     for m in re.findall(r'%ranks=(\d+)', ln)}
            assert ranks == {1, 2}, (check, io, ranks)
    quick = reframe(tmp_path / 'rq', '-c', CHECKS, '-l', '--tag', 'quick')
    assert 'Scaling' not in quick.stdout and 'IORCompare' not in quick.stdout


def test_unlisted_rank_count_is_skipped_with_reason(tmp_path):
    proc = reframe(tmp_path / 'rf', '-c', os.path.join(CHECKS, 'scaling.py'), '-r', '--tag', 'scaling',
                   '-n', 'BenchIOScaling.*io=posix:fpp', '-P', 'ranks=3')
    assert proc.returncode == 0, proc.output[-3000:]
    skip = [ln for ln in proc.stdout.splitlines() if 'SKIP' in ln and 'BenchIOScaling' in ln]
    assert skip and '[ranks=3 is not in the rank_counts [1, 2] of partition local:default' in skip[0]


def test_rank_counts_are_validated():
    assert scaling.counts_of({'rank_counts': [4, 1, 2, 2]}) == [1, 2, 4]
    assert scaling.counts_of({}) == list(scaling.DEFAULT)
    for bad in ([0, 1], ['x'], 'oops'):
        with pytest.raises(ValueError, match='rank_counts'):
            scaling.counts_of({'rank_counts': bad})
    assert shutil.which('bash')  # the pair script is bash
    lines = ior_pairs.pair_script('mpirun -np 2', '/x/iobench', '/y/ior', 'hdf5:collective', '/d', 4, '1m', 2, 3)
    iob = [i for i, ln in enumerate(lines) if ln.startswith('mpirun') and '/x/iobench' in ln]
    ior = [i for i, ln in enumerate(lines) if ln.startswith('mpirun') and '/y/ior' in ln]
    assert len(iob) == len(ior) == 6 and iob[0] < ior[0] and ior[2] < iob[2] and iob[4] < ior[4]
    assert all('-a HDF5 -c -b 4m -t 1m -s 2 -e -l o ' in lines[i] for i in ior)   # offset stamps, as iobench's


def test_ior_pairs_place_ranks_from_the_configuration(tmp_path, monkeypatch):
    """The IOR comparison job asks for the placement the iobench checks ask for (docs/site.md): on
    local-cluster (4 cores per node) at most 4 tasks per node on whole nodes, so IOR and iobench run
    on the nodes the suite's figures come from. A dry run writes the job scripts without running."""
    ior = ior_binary()
    if not ior:
        pytest.skip('no IOR binary (IOR_ROOT or PATH): IORPairs skips before its job script exists')
    monkeypatch.setenv('IOR_ROOT', os.path.dirname(os.path.dirname(ior)))
    work = tmp_path / 'rf'
    work.mkdir()
    proc = subprocess.run(['reframe', '-C', os.path.join(os.path.dirname(CHECKS), 'configs', 'settings.py'),
                           '--system', 'local-cluster', '-c', os.path.join(CHECKS, 'ior_compare.py'),
                           '-n', 'IORCompare.*posix:fpp', '--dry-run', '--prefix', str(work), '--nocolor'],
                          capture_output=True, text=True, timeout=300, cwd=work)
    scripts = sorted(work.glob('stage/local-cluster/cluster/*/IORPairs_*/rfm_job.sh'))
    assert len(scripts) == 2, proc.stdout[-3000:]          # the smallest and the largest rank count
    for script in scripts:
        text = script.read_text()
        ntasks = int(re.search(r'#SBATCH --ntasks=(\d+)', text).group(1))
        assert f'#SBATCH --ntasks-per-node={min(ntasks, 4)}\n' in text, text
        assert '#SBATCH --exclusive\n' in text, text
