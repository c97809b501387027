"""Real ReFrame runs feeding postprocess: the fio baseline check, and the results DB."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from postprocess.history.perflog import read_perflogs
from postprocess.history.reports import db_records
from postprocess.history.store import History, merge_runs
from tests.support.reframe_runs import TEST_CHECKS

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.reframe


def reframe(config, checkfile, tmp_path, *extra):
    cmd = ['reframe', '-C', str(config), '-c', str(checkfile), '-r', '--system', 'local',
           '--prefix', str(tmp_path / 'rf'), '--perflogdir', str(tmp_path / 'perflogs'),
           '--report-file', str(tmp_path / 'report.json'), *extra]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_baseline_fio_check_logs_raw_repetitions(tmp_path):
    if not any(os.access(os.path.join(d, 'fio'), os.X_OK) for d in os.environ['PATH'].split(':')):
        pytest.skip('fio not installed (apt-get install fio)')
    # calibrated from 1 MiB per process until each phase lasts >= 0.05 s (the suites: 0.25 / 1 s)
    proc = reframe(REPO / 'configs' / 'settings.py', REPO / 'reframe_checks' / 'baseline_fio.py',
                   tmp_path, '-n', 'BaselineFio.*suite=quick', '-S', 'size_mib=1', '-S', 'repeat=2',
                   '-S', 'min_seconds=0.05')
    assert proc.returncode == 0, proc.stdout[-3000:]
    runs, diag = read_perflogs(tmp_path / 'perflogs')
    assert list(diag) == [] and len(runs) == 1
    run = runs[0]
    assert run['param_dict']['backend'] == 'fio' and run['param_dict']['size'] == 'min0.05s'
    assert run['param_dict']['ranks'] == '2' and run['provenance']['numjobs'] == 2
    size = run['provenance']['size_mib_per_process']
    assert size >= 1
    for phase in ('write', 'read'):
        assert [b for b, _ in run['reps'][phase]] == [size * 2 * 2 ** 20] * 2
        assert all(s >= 0.05 for _, s in run['reps'][phase]), run['reps'][phase]
    assert run['provenance']['sync_method'].startswith('fio end_fsync=1')
    assert run['provenance']['cache_defeat'].startswith('fio invalidate=1')
    assert not os.path.exists(run['provenance']['dir'])            # data removed
    assert run['perf']['write_bw']['value'] > 0


def test_results_db_ingest_matches_perflog(tmp_path):
    config = tmp_path / 'config.py'
    config.write_text(textwrap.dedent(f'''
        import importlib.util
        spec = importlib.util.spec_from_file_location('s', {str(REPO / 'configs' / 'settings.py')!r})
        base = importlib.util.module_from_spec(spec); spec.loader.exec_module(base)
        site_configuration = dict(base.site_configuration)
        site_configuration['storage'] = [{{'enable': True,
                                          'sqlite_db_file': {str(tmp_path / 'results.db')!r}}}]
    '''))
    for _ in range(2):
        proc = reframe(config, TEST_CHECKS / 'tiny_db.py', tmp_path)
        assert proc.returncode == 0, proc.stdout[-3000:]
    (tmp_path / '.db.lock').unlink()                 # ReFrame's, from storing the sessions
    db_runs = db_records(str(tmp_path / 'results.db'))         # through ReFrame's storage API
    assert len(db_runs) == 2 and not (tmp_path / '.db.lock').exists()   # nothing left beside it
    assert len({r['session'] for r in db_runs}) == 2          # the DB knows the sessions
    run = db_runs[0]
    assert run['reps'] == {'write': [(1048576.0, 0.01), (1048576.0, 0.02)],
                           'read': [(1048576.0, 0.005)]}
    assert run['perf']['write_bw']['value'] == 100.0
    log_runs, _ = read_perflogs(tmp_path / 'perflogs')
    assert len(log_runs) == 2
    merged = merge_runs(db_runs, log_runs)                       # same runs: kept once
    assert len(merged) == 2 and all(len(r['session']) == 36 for r in merged)
    assert len(History(merged)) == 6
    # the CLI reads the DB too, alone or together with the perflogs (no double counting)
    for extra in ([], ['--perflogs', str(tmp_path / 'perflogs')]):
        proc = subprocess.run([sys.executable, '-m', 'postprocess', 'ingest', '--db',
                               str(tmp_path / 'results.db'), *extra], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert len(proc.stdout.splitlines()) == 1 + 6
    # the nightly's last step: its report into the results store, once, whatever asks again
    store = tmp_path / 'store'
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'store-run', '--run', str(tmp_path),
                           '--store', str(store)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in store.glob('system=local/year=*/*.parquet')) == \
        [f'{tmp_path.name}.reps.parquet', f'{tmp_path.name}.runs.parquet']
    for extra in ([], ['--this-run', str(tmp_path)], ['--db', str(tmp_path / 'results.db')]):
        proc = subprocess.run([sys.executable, '-m', 'postprocess', 'ingest', '--store', str(store),
                               '--format', 'jsonl', *extra], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        rows = [json.loads(line) for line in proc.stdout.splitlines()]
        # the store's run, and with the DB the other session too: each run counted once
        assert len(rows) == (6 if '--db' in extra else 3), extra
        assert len({r['session'] for r in rows}) == len(rows) // 3
        assert all(len(r['session']) == 36 for r in rows)            # ReFrame's session UUID
