"""End to end: real `ci/nightly.sh` nights with ReFrame's results DB on (the default), re-dated into
nights as tests/test_verdicts_e2e.py does. The BenchIO history of the first five (detect's
min_nights) is then made 1000x faster (each repetition's seconds / 1000, in the perflogs, the DB and the
results store alike; fio as measured), so the sixth night is a far fall whatever the load of this
shared machine (Student's t on five usual nights asks 17 spreads), a regression confirmed by the
re-run; a seventh run fails (no scratch directory) on the same real night as the sixth (run
directories keep today's date), so it is not told again. Checks that stock ReFrame answers
`--list-stored-sessions` and `--performance-compare` from the results tree's DB (the confirmation
re-run is not stored: it is no night), that detect finds the same from the DB as from the perflogs,
and that IOREGRESS_NOTIFY got one message (a webhook on loopback).
"""
import datetime
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.nights import FIRST_NIGHT, nightly, redate, today
from tests.support.reframe_runs import TEST_CHECKS
from tests.support.servers import webhook

FAST = ['BenchIO.*size=64.*ranks=2.*posix:fpp', 'BaselineFio']
# the red night follows the detect option min_nights (5) clean nights: fewer are insufficient history
RED = 5
NIGHTS = RED + 2

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.reframe


def redate_db(db, since, shift):
    """Move the sessions stored after unix time ``since`` by ``shift`` seconds, the shift redate()
    gave their perflog lines (the run's first line to 20:00 UTC of its night), so that a run read
    from both is one run: every *_unix time of the session and its cases."""
    if shift is None:       # the night wrote no perflog line
        return

    def move(doc):
        if isinstance(doc, dict):
            return {k: (v + shift if k.endswith('_unix') and isinstance(v, (int, float))
                        else move(v)) for k, v in doc.items()}
        if isinstance(doc, list):
            return [move(v) for v in doc]
        return doc

    conn = sqlite3.connect(db)
    with conn:
        for uuid, blob in conn.execute('SELECT uuid, json_blob FROM sessions '
                                       'WHERE session_start_unix > ?', (since,)).fetchall():
            conn.execute('UPDATE sessions SET json_blob = ?, session_start_unix = '
                         'session_start_unix + ?, session_end_unix = session_end_unix + ? '
                         'WHERE uuid = ?', (json.dumps(move(json.loads(blob))), shift, shift, uuid))
            conn.execute('UPDATE testcases SET job_completion_time_unix = '
                         'job_completion_time_unix + ? WHERE session_uuid = ?', (shift, uuid))
    conn.close()


def scale_reps(reps, factor):
    """'write=B:S,B:S;read=B:S' with every S divided by ``factor``."""
    def phase(part):
        name, _, items = part.partition('=')
        return name + '=' + ','.join(f'{b}:{float(t) / factor!r}' for b, _, t in
                                     (i.partition(':') for i in items.split(',') if i))
    return ';'.join(phase(p) for p in reps.split(';') if p)


def faster_history(results, factor):
    """Every BenchIO night so far ``factor`` times faster, the same in the perflogs, the DB and the
    results store (fio stays: the filesystem was not what changed)."""
    for path in (results / 'perflogs').rglob('BenchIO*.log'):
        lines = path.read_text().split('\n')
        for i, line in enumerate(lines):
            fields = line.split('|')
            if len(fields) > 10 and fields[9] != 'iob_reps':
                fields[9] = scale_reps(fields[9], factor)
                lines[i] = '|'.join(fields)
        with open(path, 'r+') as fp:             # same file (inode): as an append-only history
            fp.write('\n'.join(lines))
            fp.truncate()
    conn = sqlite3.connect(results / 'reframe.db')
    with conn:
        for uuid, blob in conn.execute('SELECT uuid, json_blob FROM sessions').fetchall():
            doc = json.loads(blob)
            for run in doc['runs']:
                for case in run['testcases']:
                    if case.get('iob_reps') and case['name'].startswith('BenchIO'):
                        case['iob_reps'] = scale_reps(case['iob_reps'], factor)
            conn.execute('UPDATE sessions SET json_blob = ? WHERE uuid = ?', (json.dumps(doc), uuid))
    conn.close()
    import duckdb           # and in the results store, the history the nightly judges on
    for path in (results / 'store').rglob('*.reps.parquet'):
        runs = path.with_name(path.name.replace('.reps.', '.runs.'))
        tmp = path.with_name(f'.{path.name}.tmp')
        con = duckdb.connect()      # the check is the run's (its table beside)
        scale = (f"""CASE WHEN seq IN (SELECT seq FROM read_parquet('{runs}') WHERE "check" """
                 f"""LIKE 'BenchIO%') THEN {factor!r} ELSE 1 END""")
        con.execute(f"COPY (SELECT * REPLACE (seconds / {scale} AS seconds) FROM "
                    f"read_parquet('{path}', hive_partitioning = false)) TO '{tmp}' (FORMAT parquet)")
        con.close()
        tmp.rename(path)


def detect(args, out):
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'detect', *args, '--system', 'local',
                           '--all-nights', '--json', str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    # the session is what only the DB knows (ReFrame's UUID; perflogs: a time-gap id); machine
    # and why are read from the perflog line's provenance (issue 20), which the DB does not keep
    return sorted((json.dumps({k: v for k, v in f.items() if k not in ('session', 'machine', 'why')}, sort_keys=True)
                   for f in json.loads(out.read_text())))


def reframe_db(results, *args):
    env = dict(os.environ, RFM_ENABLE_RESULTS_STORAGE='y',
               RFM_SQLITE_DB_FILE=str(results / 'reframe.db'))
    return subprocess.run(['reframe', '-C', str(REPO / 'configs' / 'settings.py'), *args],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow      # seven real nightlies plus the confirmation re-run: ~3 min on a quiet 2-core VM
def test_nightly_results_db_same_findings_and_one_message_per_night(tmp_path):
    results = tmp_path / 'results'
    base = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
                IOREGRESS_REPORT_URL='https://ci.example.org/ioregress/')
    base.pop('IOREGRESS_RESULTS_DB', None)
    statuses, told, outs = [], [], []
    with webhook() as (port, received):
        base['IOREGRESS_NOTIFY'] = f'json://127.0.0.1:{port}/night'
        for i in range(NIGHTS):
            if i == RED:
                faster_history(results, 1000.0)
            perflogs = results / 'perflogs'
            sizes = {p: p.stat().st_size for p in perflogs.rglob('*.log')} if perflogs.exists() else {}
            since, started = time.time(), today()
            env = dict(base, IOREGRESS_SCRATCH='/proc/ioregress-no-such-dir') if i == RED + 1 else base
            proc = nightly(results, FAST, env)
            statuses.append(proc.returncode)
            outs.append(proc.stdout[-4000:] + proc.stderr[-2000:])
            told.append(len(received))
            night = (FIRST_NIGHT + datetime.timedelta(days=i)).isoformat()
            shift = redate(results, sizes, night, {started, today()})    # perflogs and verdict
            redate_db(results / 'reframe.db', since, shift)
        out = outs[-1]
    # on a mismatch, the output of the first night that differs (not only the last one's)
    want = [0] * RED + [3, 1]
    wrong = next((i for i, (got, w) in enumerate(zip(statuses, want)) if got != w), -1)
    assert statuses == want, f'night {wrong}: {outs[wrong]}'
    # one message, on the red night: its verdict lines and the page's published address; the
    # failing run of the same night is not told again (tests/test_notify.py: 'FAILED (...)')
    assert told == [0] * RED + [1, 1], out
    runs = sorted(p.name for p in (results / 'runs').iterdir())
    docs = [json.loads(body) for _, body in received]
    assert [path for path, _ in received] == ['/night']
    assert docs[0]['title'].endswith(': RED (regression)'), docs[0]
    assert 'REGRESSION' in docs[0]['message'] or 'SYSTEM-WIDE' in docs[0]['message'], docs[0]
    assert f'https://ci.example.org/ioregress/runs/{runs[RED]}/post/report/index.html' in docs[0]['message']
    verdict = json.loads((results / 'runs' / runs[RED] / 'post' / 'verdict.json').read_text())
    assert verdict['status'] == 'regression' and verdict['confirmation'] == 'done'
    state = json.loads((results / 'notify' / 'local.json').read_text())
    assert state['state'] == 'red' and state['run'] == runs[RED]

    # stock ReFrame on the results tree's DB: the nights, not the confirmation re-run
    conn = sqlite3.connect(results / 'reframe.db')
    uuids = [u for (u,) in conn.execute('SELECT uuid FROM sessions ORDER BY session_start_unix')]
    conn.close()
    assert len(uuids) == NIGHTS
    listed = reframe_db(results, '--list-stored-sessions=20251201:now')
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert all(u in listed.stdout for u in uuids)
    cmp = reframe_db(results, f'--performance-compare={uuids[0]}/{uuids[RED]}/mean:/')
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr
    assert 'write_bw' in cmp.stdout and 'BenchIO' in cmp.stdout

    # the same findings from the DB, from the perflogs, and from both (a run counted once); the
    # red night's confirmation re-run is data of its night (--runs) whatever the source
    runs = ['--runs', str(results / 'runs')]
    from_logs = detect(['--perflogs', str(results / 'perflogs'), *runs], tmp_path / 'logs.json')
    from_db = detect(['--db', str(results / 'reframe.db'), *runs], tmp_path / 'db.json')
    both = detect(['--perflogs', str(results / 'perflogs'), '--db', str(results / 'reframe.db'),
                   *runs], tmp_path / 'both.json')
    assert len(from_logs) == 4 * (RED + 1) and from_db == from_logs and both == from_logs
    assert any('"regression"' in f for f in from_db)


def test_db_sessions_of_incomplete_runs_are_not_history(tmp_path):
    """A nightly killed after ReFrame stored its session (during postprocess) leaves a DB session
    whose run directory has INCOMPLETE: left out like its perflog lines, unless it is --this-run."""
    results = tmp_path / 'results'
    env = dict(os.environ, RFM_ENABLE_RESULTS_STORAGE='y',
               RFM_SQLITE_DB_FILE=str(results / 'reframe.db'))
    runs = []
    for name, mark in (('20260101T020000Z-local-quick', 'COMPLETE'),
                       ('20260102T020000Z-local-quick', 'INCOMPLETE')):
        run = results / 'runs' / name
        run.mkdir(parents=True)
        proc = subprocess.run(['reframe', '-C', str(REPO / 'configs' / 'settings.py'), '-c',
                               str(TEST_CHECKS / 'tiny_db.py'), '-r', '--system', 'local', '--prefix',
                               str(run), '--perflogdir', str(tmp_path / 'other-perflogs'),
                               '--report-file', str(run / 'report.json')],
                              cwd=run, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:]
        (run / mark).write_text('x\n')
        runs.append(run)

    def ingest(*extra):
        proc = subprocess.run([sys.executable, '-m', 'postprocess', 'ingest', '--db',
                               str(results / 'reframe.db'), *extra], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc
    proc = ingest()
    assert len(proc.stdout.splitlines()) == 1 + 3                # one run: 3 repetition rows
    assert 'note: 1 results-DB sessions of nightly runs that did not complete' in proc.stderr
    proc = ingest('--this-run', str(runs[1]))                     # the nightly asking counts itself
    assert len(proc.stdout.splitlines()) == 1 + 6 and 'note' not in proc.stderr
