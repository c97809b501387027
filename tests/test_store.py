"""The results store (postprocess/history/store.py) on real Parquet files through real DuckDB:
`import` from perflogs, `store-run` from a nightly's report, the history read back, and the same
findings as from the perflogs themselves."""
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

REPO = Path(__file__).resolve().parent.parent
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'
REAL = REPO / 'tests' / 'fixtures' / 'perflogs' / 'real'


def pp(*args):
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def load(*argv, nights=None):
    inputs.PENDING.clear()
    return inputs.load_history(build_parser().parse_args(['ingest', *map(str, argv)]),
                               last_nights=nights)


@pytest.fixture
def results(tmp_path):
    """A results tree whose perflogs are the synthetic fixture, imported into its store."""
    shutil.copytree(SYNTH, tmp_path / 'perflogs')
    proc = pp('import', '--perflogs', tmp_path / 'perflogs')
    assert proc.returncode == 0, proc.stderr
    return tmp_path


def parquet_files(store):
    return sorted(p.relative_to(store) for p in Path(store).rglob('*.parquet'))


def test_import_writes_one_file_per_system_and_year_and_again_replaces_it(results):
    store = results / 'store'
    files = parquet_files(store)
    assert len(files) == 1 and str(files[0]).startswith('system=synthetic/year=2026/import-')
    rows = duckdb.sql(f"SELECT count(*), count(DISTINCT testcase), count(DISTINCT night) "
                      f"FROM '{store}/**/*.parquet'").fetchone()
    assert rows == (155 * 10 - 1, 155, 12)
    again = pp('import', '--perflogs', results / 'perflogs')
    assert again.returncode == 0, again.stderr
    assert parquet_files(store) == files          # the same sources: replaced, not added twice
    assert duckdb.sql(f"SELECT count(*) FROM '{store}/**/*.parquet'").fetchone()[0] == rows[0]
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
    assert detect(load('--store', results / 'store', nights=6), latest_only=True, horizon=6) == \
        detect(full, latest_only=True, horizon=6)


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
