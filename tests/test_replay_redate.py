"""The replays' re-dating (bench/nights.py): a night's perflog lines, store file and verdict
move to the night it stands for, one session on its date, also when the run crossed midnight (run
27.1: 24 of a night's 26 lines stayed at the real date and became a night of their own, after every
replayed one; moved with their clock times, the two after midnight joined the night before)."""
import json
import subprocess
import sys

from bench import nights


HEADER = b'job_completion_time|name|iob_reps\n'
OLD = b'2026-01-10T20:00:00+0000|BenchIO|write=1:0.5\n'


def test_a_run_across_midnight_is_one_session_on_its_night(tmp_path):
    log = tmp_path / 'perflogs' / 'local' / 'default' / 'BenchIO.log'
    log.parent.mkdir(parents=True)
    log.write_bytes(HEADER + OLD)
    sizes = nights.perflog_sizes(tmp_path)
    with open(log, 'ab') as fp:     # a run that began before midnight and ended after it
        fp.write(b'2026-11-27T23:59:58+0000|BenchIO|write=1:0.5\n'
                 b'2026-11-28T00:00:03+0000|BenchIO|write=1:0.6\n')
    new = tmp_path / 'perflogs' / 'local' / 'default' / 'MDFiles.log'      # a check's first line
    new.write_bytes(HEADER + b'2026-11-28T00:00:09+0000|MDFiles|write=1:0.1\n')
    nights.redate_perflogs(tmp_path / 'perflogs', sizes, '2026-01-11')
    # the run's first line at 20:00 of its night, the others at their offsets from it
    assert log.read_bytes() == HEADER + OLD + (b'2026-01-11T20:00:00+0000|BenchIO|write=1:0.5\n'
                                              b'2026-01-11T20:00:05+0000|BenchIO|write=1:0.6\n')
    assert new.read_bytes() == HEADER + b'2026-01-11T20:00:11+0000|MDFiles|write=1:0.1\n'


def test_the_verdict_moves_on_the_dates_the_run_spanned_only(tmp_path):
    post = tmp_path / 'latest' / 'post'
    post.mkdir(parents=True)
    findings = [{'night': '2026-11-27', 'since': '2026-11-27'},
                {'night': '2026-11-28', 'since': '2026-01-09'}]    # since a replayed night
    (post / 'verdict.json').write_text(json.dumps({'findings': findings}))
    nights.redate(tmp_path, {}, '2026-01-11', {'2026-11-27', '2026-11-28'})
    moved = json.loads((post / 'verdict.json').read_text())['findings']
    assert moved == [{'night': '2026-01-11', 'since': '2026-01-11'},
                     {'night': '2026-01-11', 'since': '2026-01-09'}]


def test_the_runs_store_file_moves_with_its_perflog_lines(tmp_path):
    """The run's files of the results store (nightly.sh's store-run writes <run>.runs.parquet and
    <run>.reps.parquet) move by
    its perflog lines' shift: times, its session's start and night, into its new night's year."""
    log = tmp_path / 'perflogs' / 'local' / 'default' / 'BenchIO.log'
    log.parent.mkdir(parents=True)
    log.write_bytes(b'job_completion_time|system|partition|environ|name|iob_params|iob_reps\n')
    sizes = nights.perflog_sizes(tmp_path)
    with open(log, 'ab') as fp:     # a run across midnight
        fp.write(b'2026-11-27T23:59:58+0000|local|default|gnu|BenchIO|backend=posix|'
                 b'write=1048576:0.5\n'
                 b'2026-11-28T00:00:03+0000|local|default|gnu|BenchIO|backend=posix|'
                 b'write=1048576:0.25\n')
    (tmp_path / 'runs' / 'night-1').mkdir(parents=True)
    (tmp_path / 'latest').symlink_to('runs/night-1')
    store = tmp_path / 'store'
    subprocess.run([sys.executable, '-m', 'postprocess', 'import', '--perflogs',
                    str(tmp_path / 'perflogs'), '--store', str(store)], check=True,
                   capture_output=True)
    for made in store.glob('system=local/year=2026/*.parquet'):
        made.rename(made.with_name('night-1.' + made.name.split('.', 1)[1]))
    nights.redate(tmp_path, sizes, '2025-12-31', {'2026-11-27', '2026-11-28'})
    assert sorted(p.relative_to(store).as_posix() for p in store.rglob('*.parquet')) == \
        ['system=local/year=2025/night-1.reps.parquet', 'system=local/year=2025/night-1.runs.parquet']
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'ingest', '--store', str(store),
                           '--format', 'jsonl'], capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r['night'], r['time'], r['bw_MiBps']) for r in rows] == [
        ('2025-12-31', '2025-12-31T20:00:00+00:00', 2.0),
        ('2025-12-31', '2025-12-31T20:00:05+00:00', 4.0)]
    assert log.read_bytes().splitlines()[1][:24] == b'2025-12-31T20:00:00+0000'
