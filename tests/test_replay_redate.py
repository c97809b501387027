"""The replays' re-dating (tests/support/nights.py): a night's perflog lines and verdict move to the night
it stands for, one session on its date, also when the run crossed midnight (run 27.1: 24 of a
night's 26 lines stayed at the real date and became a night of their own, after every replayed
one; moved with their clock times, the two after midnight joined the night before)."""
import json

from tests.support import nights


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
