"""The incremental ingest cache (postprocess/history/cache.py) and the last-nights window
(inputs.load_history(last_nights=N)) on the committed synthetic perflogs: every warm History must
equal a cold parse of the same bytes, whatever happened to the file or the cache in between."""
import shutil
from pathlib import Path

import numpy as np
import pytest

from postprocess.cli import build_parser
from postprocess.detect.suite import detect
from postprocess.history import cache, inputs

REPO = Path(__file__).resolve().parent.parent

SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'


def load(perflogs, cache_dir=None, nights=None):
    argv = ['ingest', '--perflogs', str(perflogs)] + (['--cache', str(cache_dir)] if cache_dir
                                                     else [])
    inputs.PENDING.clear()
    return inputs.load_history(build_parser().parse_args(argv), last_nights=nights)


def assert_same(a, b):
    assert a.keys == b.keys and a.sessions == b.sessions
    assert set(a.col) == set(b.col)
    for name in a.col:
        assert np.array_equal(a.col[name], b.col[name], equal_nan=True), name


@pytest.fixture
def half(tmp_path):
    """SYNTH copied with BenchIO.log cut after its first half: (directory, log, the rest)."""
    logs = tmp_path / 'logs'
    shutil.copytree(SYNTH, logs)
    log = logs / 'synthetic' / 'p1' / 'BenchIO.log'
    lines = log.read_text().splitlines(keepends=True)
    cut = len(lines) // 2
    log.write_text(''.join(lines[:cut]))
    return logs, log, ''.join(lines[cut:])


def segments(cache_dir):
    return sorted(p.name for p in cache_dir.glob('*+*.npz'))


def test_appended_lines_become_one_more_segment_equal_to_a_cold_parse(half, tmp_path):
    logs, log, rest = half
    store = tmp_path / 'cache'
    load(logs, store)
    bases = {p: p.stat().st_mtime_ns for p in store.glob('*.npz')}
    assert bases and not segments(store)
    # the last line without its newline (still being written): used now, cached next time
    with open(log, 'a') as fp:
        fp.write(rest[:-1])
    assert_same(load(logs, store), load(logs))
    with open(log, 'a') as fp:
        fp.write('\n')
    warm = load(logs, store)
    assert_same(warm, load(logs))
    assert {p: p.stat().st_mtime_ns for p in store.glob('*.npz') if '+' not in p.name} == bases
    # the appended bytes only, base untouched: its complete lines, then the completed last one
    assert len(segments(store)) == 2
    assert_same(load(logs, store), warm)             # read back from base + segment
    cached_warnings = list(inputs.PENDING)           # the bad lines, kept with their segment
    load(logs)
    assert cached_warnings == inputs.PENDING and len(cached_warnings) >= 2


def test_segments_are_compacted_into_one_file(half, tmp_path, monkeypatch):
    monkeypatch.setattr(cache, 'MAX_SEGMENTS', 3)
    logs, log, rest = half
    store = tmp_path / 'cache'
    load(logs, store)
    lines = rest.splitlines(keepends=True)
    for i, part in enumerate((lines[:1], lines[1:2], lines[2:])):
        with open(log, 'a') as fp:
            fp.write(''.join(part))
        load(logs, store)
        assert len(segments(store)) == (i + 1) % 3
    # base + two segments made the chain full: the third append rewrote one file, removed them
    assert segments(store) == []
    assert_same(load(logs, store), load(logs))


def test_rewritten_truncated_or_damaged_cache_is_never_trusted(half, tmp_path):
    logs, log, rest = half
    store = tmp_path / 'cache'
    load(logs, store)
    with open(log, 'a') as fp:
        fp.write(rest)
    load(logs, store)
    (segment,) = store.glob('*+*.npz')
    segment.write_bytes(b'PK\x03\x04 not a zip')                  # damaged: warned, rebuilt
    rebuilt = load(logs, store)
    warned = [m for m in inputs.PENDING if 'damaged' in m and segment.name in m]
    assert_same(rebuilt, load(logs))
    assert len(warned) == 1 and not segments(store)
    text = log.read_text()
    log.write_text(text.replace('BenchIO %size=64', 'BenchIO %size=65'))   # rewritten in place
    assert_same(load(logs, store), load(logs))
    assert 'BenchIO %size=65' in {k[3].split(' %ranks')[0] for k in load(logs, store).keys}
    log.write_text(''.join(text.splitlines(keepends=True)[:5]))           # truncated
    assert_same(load(logs, store), load(logs))


def test_last_nights_is_the_whole_history_cut_to_those_nights():
    full, window = load(SYNTH), load(SYNTH, nights=5)
    nights = sorted({s['night'] for s in full.sessions})
    assert sorted({s['night'] for s in window.sessions}) == nights[-5:]
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
    assert detect(load(SYNTH, nights=6), latest_only=True, **short) == \
        detect(full, latest_only=True, **short)
