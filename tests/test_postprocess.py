"""postprocess library on committed perflogs: ingest, detection, statistics, calibration."""
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from postprocess.detect.outliers import outlier_indices
from postprocess.detect.suite import detect
from postprocess.history.perflog import read_perflogs
from postprocess.history.store import History
from postprocess.references import calibrate as cal

REPO = Path(__file__).resolve().parent.parent

FIX = REPO / 'tests' / 'fixtures' / 'perflogs'
SYNTH = FIX / 'synthetic'
REAL = FIX / 'real'


def test_real_perflog_lines_parse_completely():
    runs, diag = read_perflogs(REAL)
    assert list(diag) == []
    checks = sorted({r['check'].split()[0] for r in runs})
    assert checks == ['BaselineFio', 'BenchIO']           # the build fixture's null line is skipped
    for run in runs:
        assert run['system'] == 'local' and run['partition'] == 'default'
        assert run['param_dict']['backend'] in ('posix', 'mpiio', 'hdf5', 'fio')
        assert len(run['reps']['write']) == 3 and len(run['reps']['read']) == 3
        assert run['provenance']['system'] == 'local'
        # the median perf value ReFrame logged equals the median of the raw repetitions
        bws = sorted(b / s / 2 ** 20 for b, s in run['reps']['write'])
        assert run['perf']['write_bw']['value'] == pytest.approx(bws[1], rel=1e-9)


def test_rotated_file_and_its_header_are_read():
    runs, diag = read_perflogs(FIX / 'real-rotation')
    assert list(diag) == []
    assert len(runs) == 4
    results = sorted(r['result'] for r in runs)
    assert results == ['fail', 'fail', 'pass', 'pass']       # .h0 passes, new file fails
    assert {r['jobid'] for r in runs} and all(r['reps']['write'] for r in runs)


def test_synthetic_history_problems_reported_with_file_and_line():
    runs, diag = read_perflogs(SYNTH)
    text = '\n'.join(diag)
    assert 'BenchIO.log:17: expected 26 fields, found 10' in text        # truncated line
    assert "BenchIO.log:28: non-numeric value write_bw='fast" in text
    assert "BenchIO.log:28: non-numeric repetition write='n/a:" in text
    assert len(diag) == 3
    # 12 nights x 12 keys + 12 baselines - 1 truncated line
    assert len(runs) == 12 * 12 + 12 - 1
    h0 = [r for r in runs if r['source'].split(':')[0].endswith('.h0')]
    assert len(h0) == 4 * 12 and all('write_open_s' not in r['perf'] for r in h0)
    late = [r for r in runs if r['time'].day == 12 and r['check'].startswith('BenchIO')]
    assert all('read_open_s' in r['perf'] for r in late)      # header changed mid-file


def test_tidy_table_has_raw_bytes_seconds_and_bandwidth():
    runs, _ = read_perflogs(SYNTH)
    hist = History(runs)
    rows = hist.rows()
    assert len(rows) == len(hist) == sum(len(v) for r in runs for v in r['reps'].values())
    row = rows[0]
    assert row['bw_MiBps'] == pytest.approx(row['bytes'] / row['seconds'] / 2 ** 20)
    assert len({r['night'] for r in rows}) == 12
    assert len(hist.sessions) == 12                    # one session per night (gap > 3 h)
    eff = [r for r in rows if not r['check'].startswith('Baseline')]
    assert all(math.isfinite(r['efficiency']) for r in eff)
    base = [r for r in rows if r['check'].startswith('Baseline')]
    assert all(math.isnan(r['efficiency']) for r in base)


# the synthetic steps on the last three nights: writes of one series halve (red on the third,
# since the first), reads of posix/fpp double (an improvement); on bandwidth and on efficiency
# (the shared load factor divided out) alike
PLANTED = {
    ('2026-11-12', 'backend=mpiio,mode=collective,pattern=benchio,ranks=4,size=64,stripe=default',
     'write', 'regression', '2026-11-10'),
    ('2026-11-12', 'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default',
     'read', 'improvement', '2026-11-10')}


def _flags(runs, value, **options):
    return {(f['night'], f['params'], f['phase'], f['status'], f['since'])
            for f in detect(History(runs), value=value, **options)
            if f['status'] in ('regression', 'improvement')}


def test_detect_on_efficiency_flags_exactly_the_planted_changes():
    runs, _ = read_perflogs(SYNTH)
    assert _flags(runs, 'efficiency') == PLANTED
    findings = detect(History(runs), value='efficiency')
    early = [f for f in findings if f['night'] <= '2026-11-05']
    assert early and all(f['status'] == 'insufficient history' for f in early)
    before = [f['status'] for f in findings if f['params'] == sorted(PLANTED)[0][1]
              and f['phase'] == 'write' and f['night'] in ('2026-11-10', '2026-11-11')]
    assert before == ['noisy', 'degraded']       # one low night, two: shown, not red


def test_detect_on_absolute_bandwidth_is_not_moved_by_the_machine_load():
    # The synthetic nights share a load factor (CV 8 %) that also hits fio: no night of it is
    # red, and the partition's stack level is judged on both phases.
    runs, _ = read_perflogs(SYNTH)
    assert _flags(runs, 'bw_MiBps') == PLANTED
    stack = [f for f in detect(History(runs)) if f['scope'] in ('stack', 'system')]
    assert stack and all(f['status'] not in ('regression', 'degraded') for f in stack)
    assert {f['phase'] for f in stack} == {'write', 'read'}


def test_single_run_and_empty_history():
    assert detect(History([])) == []
    runs, _ = read_perflogs(REAL)
    findings = detect(History(runs))
    assert findings and all(f['status'] == 'insufficient history' for f in findings)


def test_outliers_flagged_not_dropped():
    vals = [100, 101, 99, 100, 102, 98, 100, 5000]
    assert outlier_indices(vals, 12) == [7]
    assert outlier_indices(vals[:-1], 12) == [] and outlier_indices([1, 2, 900], 12) == []


def _calibrate(tmp_path, runs, **kw):
    out = tmp_path / 'synthetic.yaml'
    msgs = []
    kw.setdefault('variables', None)        # every perf variable
    written, kept = cal.calibrate(runs, str(out), 'synthetic', warn=msgs.append, **kw)
    return out, written, kept, msgs


def test_calibrate_writes_the_reference_format(tmp_path):
    runs, _ = read_perflogs(SYNTH)
    out, written, kept, msgs = _calibrate(tmp_path, runs)
    assert written == 13 and kept == 0 and msgs == []
    data = yaml.safe_load(out.read_text())
    # the layout postprocess/references/reference_file.py validates and ReFrame reads
    from contract import reference_file
    reference_file.validate(str(out), data)
    assert data['BenchIO']['$index'] == ['$partition', 'iob_params']
    key = 'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default'
    entry = data['BenchIO']['synthetic:p1'][key]
    ref, lower, upper, unit = entry['write_bw']
    vals = [r['perf']['write_bw']['value'] for r in runs if r['params'] == key]
    assert ref == pytest.approx(np.median(vals), rel=1e-3)
    assert -0.9 <= lower <= -0.1 and upper is None and unit == 'MiB/s'
    assert entry['write_open_s'][1] is None and entry['write_open_s'][2] > 0   # time: upper bound
    text = out.read_text()
    assert '# calibrated 2026-11-01..2026-11-12: 12 runs' in text
    assert '# calibrated 2026-11-01..2026-11-12: 11 runs' in text   # the non-numeric line left out
    assert not list(tmp_path.glob('.*.tmp'))


def test_calibrate_keeps_hand_set_and_stale_entries(tmp_path):
    runs, _ = read_perflogs(SYNTH)
    out = tmp_path / 'synthetic.yaml'
    key = 'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default'
    out.write_text(yaml.safe_dump({
        'require_reference': True,
        'BenchIO': {'$index': ['$partition', 'iob_params'], 'synthetic:p1': {
            key: {'write_bw': [123, -0.5, None, 'MiB/s']},
            'backend=gone,mode=x,pattern=benchio,ranks=2,size=1,stripe=default':
                {'write_bw': [1, -0.5, None, 'MiB/s']}}}}))
    _, written, kept, msgs = _calibrate(tmp_path, runs, date_from='2026-11-01')
    data = yaml.safe_load(out.read_text())
    assert data['require_reference'] is True
    assert data['BenchIO']['synthetic:p1'][key]['write_bw'][0] == 123      # hand-set kept
    assert 'backend=gone' in ''.join(data['BenchIO']['synthetic:p1'])       # stale kept
    assert any('hand-set entry kept' in m for m in msgs)
    assert any('backend=gone' in m and 'no runs' in m for m in msgs)
    assert kept == 1 and written == 12
    # a second calibration replaces its own stamped entries but still not the hand-set one
    _, written2, kept2, _ = _calibrate(tmp_path, runs[:60])
    assert kept2 == 1
    # --overwrite replaces the hand-set one
    _, _, kept3, _ = _calibrate(tmp_path, runs, overwrite=True)
    data = yaml.safe_load(out.read_text())
    assert kept3 == 0 and data['BenchIO']['synthetic:p1'][key]['write_bw'][0] != 123


def test_calibrate_without_runs_leaves_file_alone(tmp_path):
    out = tmp_path / 'synthetic.yaml'
    out.write_text('BenchIO: {}\n')
    with pytest.raises(ValueError, match='no runs'):
        cal.calibrate([], str(out), 'synthetic')
    assert out.read_text() == 'BenchIO: {}\n'


def test_nothing_rewrites_the_perflogs(tmp_path):
    copy = tmp_path / 'logs'
    shutil.copytree(SYNTH, copy)
    before = {p: p.read_bytes() for p in copy.rglob('*') if p.is_file()}
    runs, _ = read_perflogs(copy)
    detect(History(runs))
    cal.calibrate(runs, str(tmp_path / 'r.yaml'), 'synthetic', warn=lambda m: None)
    after = {p: p.read_bytes() for p in copy.rglob('*') if p.is_file()}
    assert before == after
    assert sorted(os.listdir(tmp_path)) == ['logs', 'r.yaml']        # no temporary files left


def test_calibrate_defaults_to_bandwidths_keeps_ceilings_and_warns_on_few_runs(tmp_path):
    runs, _ = read_perflogs(REAL)
    out = tmp_path / 'local.yaml'
    key = 'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default'
    out.write_text(yaml.safe_dump({'BenchIO': {'$index': ['$partition', 'iob_params'],
                                               'local:default': {key: {
                                                   'write_bw': [60, -0.95, 28.0, 'MiB/s']}}}}))
    msgs = []
    written, kept = cal.calibrate(runs, str(out), 'local', overwrite=True, warn=msgs.append)
    data = yaml.safe_load(out.read_text())
    entry = data['BenchIO']['local:default'][key]
    assert sorted(entry) == ['read_bw', 'write_bw']
    ref, lower, upper, _ = entry['write_bw']
    assert lower == -0.5                                  # one run: the wide few-runs tolerance
    assert ref * (1 + upper) == pytest.approx(60 * 29.0, rel=0.02)     # ceiling kept (absolute)
    assert entry['read_bw'][2] is None
    assert any('fewer than 3 runs' in m for m in msgs)


def test_efficiency_uses_the_baseline_of_the_runs_rank_count(tmp_path):
    """A session with fio baselines at 1 and 2 processes: ranks=2 runs divide by the 2-process
    baseline (shape_matched), ranks=4 runs by the smallest one as a load normaliser only."""
    logs = tmp_path / 'p'
    shutil.copytree(SYNTH, logs)
    base = logs / 'synthetic' / 'p1' / 'BaselineFio.log'
    lines = base.read_text().splitlines()
    slow = []        # the same nights at ranks=2, every repetition twice as long
    for line in lines[1:]:
        f = line.split('|')
        f[6] = f[6].replace('ranks=1', 'ranks=2')
        f[9] = ';'.join(ph + '=' + ','.join(f'{b}:{float(s) * 2!r}' for b, s in
                                            (r.split(':') for r in reps.split(',')))
                        for ph, reps in (part.split('=', 1) for part in f[9].split(';')))
        slow.append('|'.join(f))
    base.write_text('\n'.join(lines + slow) + '\n')
    hist = History(read_perflogs(logs)[0])
    plain = History(read_perflogs(SYNTH)[0])
    key_ranks = np.array([int(dict(p.split('=') for p in k[4].split(','))['ranks']) for k in hist.keys])
    rows = ~np.isnan(hist.col['efficiency'])
    r2 = rows & (key_ranks[hist.col['key']] == 2)
    r4 = rows & (key_ranks[hist.col['key']] == 4)
    assert r2.any() and r4.any()
    assert hist.col['shape_matched'][r2].all() and not hist.col['shape_matched'][r4].any()
    assert not plain.col['shape_matched'].any()          # only ranks=1 baselines there
    # same runs, same order: the 2-process baseline is half as fast, so efficiency doubles
    eff_plain = {(k, s, p, r): e for k, s, p, r, e in zip(
        [plain.keys[i] for i in plain.col['key']], plain.col['session'], plain.col['phase'],
        plain.col['rep'], plain.col['efficiency'])}
    for i in np.flatnonzero(r2 | r4)[:50]:
        e0 = eff_plain[(hist.keys[hist.col['key'][i]], hist.col['session'][i], hist.col['phase'][i],
                        hist.col['rep'][i])]
        want = 2 * e0 if r2[i] else e0
        assert hist.col['efficiency'][i] == pytest.approx(want, rel=1e-9)


def test_every_night_of_the_named_series_and_the_latest_of_the_others():
    """A cold report judges every night only of the series it draws (detect's every_night): those
    findings, and every series' and group's latest night, are the ones full detection gives."""
    runs, _ = read_perflogs(SYNTH)
    history = History(runs)
    full = detect(history, nights_from='2026-11-06')
    asked = []

    def named(latest):
        asked.append(latest)
        return {(f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])
                for f in latest if f['status'] == 'regression'}
    part = detect(history, nights_from='2026-11-06', every_night=named)
    key = lambda f: (f['system'], f['partition'], f['environ'], f['check'], f['params'],  # noqa
                     f['phase'])
    last = {}
    for f in full:
        last[key(f)] = max(last.get(key(f), ''), f['night'])
    assert sorted(map(repr, asked[0])) == sorted(repr(f) for f in full if f['night'] == last[key(f)])
    wanted = named(asked[0])
    assert wanted and len(wanted) < len(last)
    assert sorted(map(repr, part)) == sorted(
        repr(f) for f in full if key(f) in wanted or f['night'] == last[key(f)])
