"""The results store (postprocess/history/store.py) on real Parquet files through real DuckDB:
`import` from perflogs, `store-run` from a nightly's report, the history read back, and the same
findings as from the perflogs themselves."""
import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from postprocess.cli import build_parser
from postprocess.detect.suite import detect
from postprocess.history import inputs
from postprocess.history import store as store_mod
from postprocess.history.cli import query_of

REPO = Path(__file__).resolve().parent.parent
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'
REAL = REPO / 'tests' / 'fixtures' / 'perflogs' / 'real'


def pp(*args):
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def load(*argv, nights=None):
    query = query_of(build_parser().parse_args(['ingest', *map(str, argv)]))
    return inputs.load_history(query, last_nights=nights)[0]


@pytest.fixture
def results(tmp_path):
    """A results tree whose perflogs are the synthetic fixture, imported into its store."""
    shutil.copytree(SYNTH, tmp_path / 'perflogs')
    proc = pp('import', '--perflogs', tmp_path / 'perflogs')
    assert proc.returncode == 0, proc.stderr
    return tmp_path


def parquet_files(store):
    return sorted(p.relative_to(store) for p in Path(store).rglob('*.parquet'))


def scan(store):
    """The store rows of every file (as the commands read them)."""
    return store_mod.scan_sql(store_mod.files(store))


def test_import_writes_two_files_per_system_and_year_and_again_replaces_them(results):
    store = results / 'store'
    files = parquet_files(store)
    name = files[0].name.split('.')[0]
    assert str(files[0]).startswith('system=synthetic/year=2026/import-')
    assert [f.name for f in files] == [f'{name}.reps.parquet', f'{name}.runs.parquet']
    rows = duckdb.sql(f"SELECT count(*), count(DISTINCT testcase), count(DISTINCT night) "
                      f"FROM {scan(store)}").fetchone()
    assert rows == (155 * 10 - 1, 155, 12)
    # the lean layout: a row per run, a narrow row per repetition
    assert duckdb.sql(f"SELECT count(*) FROM '{store}/**/*.runs.parquet'").fetchone()[0] == 155
    assert [c for c, *_ in duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet("
                                      f"'{store}/**/*.reps.parquet', hive_partitioning = false)"
                                      ).fetchall()] == ['write_id', 'seq', 'phase', 'rep', 'bytes',
                                                        'seconds']
    again = pp('import', '--perflogs', results / 'perflogs')
    assert again.returncode == 0, again.stderr
    assert parquet_files(store) == files          # the same sources: replaced, not added twice
    assert duckdb.sql(f"SELECT count(*) FROM {scan(store)}").fetchone()[0] == rows[0]
    assert not list(store.rglob('.*'))            # no temporary file left


def test_history_from_the_store_is_the_history_from_the_perflogs(results):
    a, b = load('--store', results / 'store'), load('--perflogs', SYNTH)
    assert a.keys == b.keys and a.sessions == b.sessions
    for name in b.col:
        assert np.array_equal(a.col[name], b.col[name], equal_nan=True), name
    strip = lambda fs: sorted(json.dumps(f, sort_keys=True, default=str) for f in fs)  # noqa: E731
    assert strip(detect(a, value='efficiency')) == strip(detect(b, value='efficiency'))
    run = a.runs[len(a.runs) - 1]
    assert run['provenance'] == {'synthetic': True, 'sync_method': 'fsync'}
    assert run['perf']['write_bw']['unit'] == 'MiB/s'


def test_last_nights_is_the_whole_history_cut_to_those_nights(results):
    full, window = load('--store', results / 'store'), load('--store', results / 'store', nights=5)
    nights = sorted({s['night'] for s in full.sessions})
    assert window.sessions == [s for s in full.sessions if s['night'] >= nights[-5]]
    full_groups = {(full.keys[k], p): [(full.sessions[s]['id'], list(v)) for s, v in lst
                                       if full.sessions[s]['night'] >= nights[-5]]
                   for (k, p), lst in full.groups().items()}
    win_groups = {(window.keys[k], p): [(window.sessions[s]['id'], list(v)) for s, v in lst]
                  for (k, p), lst in window.groups().items()}
    assert win_groups == {k: v for k, v in full_groups.items() if v}
    # detection whose judgement reads back 6 nights (rules.lookback: 3 x (horizon + window + 1))
    # judges tonight the same on a 6-night window
    short = dict(horizon=0, window=1, min_nights=1)
    assert detect(load('--store', results / 'store', nights=6), latest_only=True, **short) == \
        detect(full, latest_only=True, **short)


def test_import_of_nothing_new_is_one_line_and_writes_nothing(results, tmp_path):
    before = parquet_files(results / 'store')
    # the same runs from another directory: the store holds them already
    shutil.copytree(SYNTH, tmp_path / 'again')
    proc = pp('import', '--perflogs', tmp_path / 'again', '--store', results / 'store')
    assert proc.returncode == 2 and proc.stderr.count('\n') == 1, proc.stderr
    assert 'does not hold already' in proc.stderr
    assert parquet_files(results / 'store') == before
    empty = tmp_path / 'empty'
    empty.mkdir()
    proc = pp('import', '--perflogs', empty, '--store', tmp_path / 'newstore')
    assert proc.returncode == 2 and 'no perflog files' in proc.stderr
    assert not (tmp_path / 'newstore').exists()


def doc_queries():
    """The SQL blocks of docs/operations.md's 'Asking it anything', as a site would paste them."""
    text = (REPO / 'docs' / 'operations.md').read_text()
    part = text.split('**Asking it anything.**', 1)[1].split('**Only the nights', 1)[0]
    return [block.split('```', 1)[0].strip() for block in part.split('```sql')[1:]]


def night_report(run_dir, day, partition, hdf5, bw):
    """A run directory whose report.json is one night of two checks as ReFrame writes it."""
    run_dir.mkdir(parents=True)
    start = datetime.datetime.combine(day, datetime.time(1, 0), datetime.timezone.utc)
    cases = []
    for i, check in enumerate(('HDF5Write', 'PosixWrite')):
        secs = [2 ** 24 / (bw * f * 2 ** 20) for f in (0.98, 1.0, 1.02)]
        cases.append({'system': 'site', 'partition': partition, 'environ': 'gnu', 'name': check,
                      'jobid': f'{partition}{day:%j}{i}', 'result': 'pass',
                      'job_completion_time_unix': start.timestamp() + 60 * (i + 1),
                      'iob_params': f'backend={"hdf5" if i == 0 else "posix"},ranks=2',
                      'iob_reps': 'write=' + ','.join(f'16777216:{s!r}' for s in secs),
                      'iob_provenance': json.dumps({'library_versions': {'hdf5': hdf5}}),
                      'perfvalues': {f'site:{partition}:write_bw': [bw, 0, None, None, 'MiB/s']}})
    report = {'session_info': {'uuid': f'{partition}-{day.isoformat()}', 'version': '4.10.4',
                               'time_start': f'{start:%Y%m%dT%H%M%S%z}',
                               'time_start_unix': start.timestamp()},
              'runs': [{'testcases': cases}]}
    (run_dir / 'report.json').write_text(json.dumps(report))
    return run_dir


def test_the_three_queries_of_the_docs_answer_with_the_duckdb_cli(results, tmp_path):
    store = results / 'store'
    today = datetime.date.today()
    for back, partition, hdf5, bw in ((3, 'fast', '1.10.8', 900.0), (2, 'fast', '1.12.3', 800.0),
                                      (2, 'slow', '1.12.3', 300.0), (1, 'slow', '1.12.3', 310.0),
                                      (40, 'slow', '1.10.8', 100.0)):
        day = today - datetime.timedelta(days=back)
        run = night_report(tmp_path / 'runs' / f'{day}-{partition}', day, partition, hdf5, bw)
        proc = pp('store-run', '--run', run, '--store', store)
        assert proc.returncode == 0, proc.stderr
    medians, changes, slowest = doc_queries()
    cli = shutil.which('duckdb')
    assert cli, 'the DuckDB CLI (pip install duckdb-cli, pinned in ci/setup.sh) is not on PATH'
    answers = []
    for sql in (medians, changes, slowest):
        proc = subprocess.run([cli, '-json', '-c', sql], cwd=results, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        answers.append(json.loads(proc.stdout or '[]'))
        with duckdb.connect() as con:       # the same answer through the Python API
            con.execute(f"SET file_search_path = '{results}'")
            assert len(con.execute(sql).fetchall()) == len(answers[-1])
    # 1: one night per synthetic night, the median of its five write repetitions
    history = load('--store', store)
    kid = next(i for i, k in enumerate(history.keys) if k[3].endswith('io=mpiio:collective')
               and '%ranks=4' in k[3] and '%size=64' in k[3])
    want = [(history.sessions[s]['night'], float(np.median(v))) for s, v in history.groups()[(kid, 0)]]
    assert [a['night'] for a in answers[0]] == [n for n, _ in want]
    assert [a['MiBps'] for a in answers[0]] == pytest.approx([m for _, m in want])
    # 2: the one HDF5 change of a series (fast, both checks, the night it came); slow's 40-day-old
    # night had 1.10.8 too
    got = {(a['partition'], a['check'], a['before'], a['hdf5']) for a in answers[1]}
    assert got == {('fast', c, '1.10.8', '1.12.3') for c in ('HDF5Write', 'PosixWrite')} | \
        {('slow', c, '1.10.8', '1.12.3') for c in ('HDF5Write', 'PosixWrite')}
    # 3: last week's slowest partition is 'slow' (its 40-day-old night is not last week)
    assert [(a['system'], a['partition']) for a in answers[2]] == [('site', 'slow')]
    assert answers[2][0]['write_MiBps'] == pytest.approx(305.0, rel=0.02)


def test_a_store_of_the_one_table_layout_still_reads_and_a_rewrite_replaces_it(results):
    """Stores written before the run and repetition tables (one wide file per writer) are read as
    they are; the writer of the same name writes its pair and removes its old file."""
    store = results / 'store'
    want = load('--store', store)
    pair = parquet_files(store)
    name = pair[0].name.split('.')[0]
    old = store / pair[0].parent / f'{name}.parquet'
    duckdb.sql(f"COPY (SELECT * FROM {scan(store)}) TO '{old}' (FORMAT parquet)")
    for path in pair:
        (store / path).unlink()
    got = load('--store', store)
    assert got.keys == want.keys and got.sessions == want.sessions
    for col in want.col:
        assert np.array_equal(got.col[col], want.col[col], equal_nan=True), col
    again = pp('import', '--perflogs', results / 'perflogs')
    assert again.returncode == 0, again.stderr
    assert parquet_files(store) == pair
    assert duckdb.sql(f"SELECT count(*) FROM {scan(store)}").fetchone()[0] == 155 * 10 - 1


# Two imports of the same sources at once (a first night started twice): the second one's renames
# are forced between the first one's two; each child runs `import` whole, real DuckDB and files.
RACER = r'''
import os, sys, time
from postprocess.history import store
role, sync = sys.argv[1], sys.argv[2]
place = store._place

def wait(path):
    deadline = time.time() + 5      # the other writer may be held by the store's turn: go on
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.02)

def slow_place(tmp, where, name, ext):
    out = place(tmp, where, name, ext)
    if role == 'first' and ext == store.REPS:
        open(os.path.join(sync, 'first-placed-reps'), 'w').close()
        wait(os.path.join(sync, 'second-done'))
    return out

store._place = slow_place
if role == 'second':
    wait(os.path.join(sync, 'first-placed-reps'))
from postprocess.cli import main
status = main(sys.argv[3:])
open(os.path.join(sync, role + '-done'), 'w').close()
sys.exit(status)
'''


def test_two_imports_at_once_leave_every_run_with_its_repetitions(results, tmp_path):
    store = results / 'store'
    shutil.rmtree(store)
    sync = tmp_path / 'sync'
    sync.mkdir()
    argv = ['import', '--perflogs', str(results / 'perflogs'), '--store', str(store)]
    procs = [subprocess.Popen([sys.executable, '-c', RACER, role, str(sync), *argv], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for role in ('first', 'second')]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert (sync / 'first-placed-reps').exists()
    rows = duckdb.sql(f"SELECT count(*), count(phase), count(DISTINCT night) "
                      f"FROM {scan(store)}").fetchone()
    assert rows == (155 * 10 - 1, 155 * 10 - 1, 12)
    assert not list(store.rglob('.*'))
