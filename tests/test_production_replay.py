"""bench/production_replay.py's parts: TOKIO-ABC read as the paper kept it, written as perflog
lines that read back to the same bandwidths, the scores' definitions, and a site's acceptance after
seven red nights."""
import datetime
import math
import os

import numpy as np
import pytest

import ioregress_env
from bench import production_replay as replay
from bench import production_score as score
from bench import production_tokio as tokio

DATA = ioregress_env.get('IOREGRESS_TOKIO') or os.path.join(os.path.dirname(__file__), '..', '..',
                                                            'shared', 'data', 'tokio-abc')
needs_data = pytest.mark.skipif(not os.path.isdir(DATA), reason=f'no TOKIO-ABC at {DATA}')


@needs_data
def test_tokio_rows_are_the_papers_and_read_back_as_perflog_lines(tmp_path):
    rows = list(tokio.rows(DATA))
    platforms = {(r['system'], r['partition']) for r in rows}
    assert platforms == {('cori', 'cscratch'), ('edison', 'scratch1'), ('edison', 'scratch2'),
                         ('edison', 'scratch3')}
    benches = {r['bench'] for r in rows}
    assert benches == {'ior_fpp_write', 'ior_fpp_read', 'ior_shared_write', 'ior_shared_read',
                       'hacc_io_write_fpp_write', 'hacc_io_read_fpp_read',
                       'vpicio_uni_shared_write', 'dbscan_read_shared_read'}
    assert 9500 < len(rows) < 10500          # ~330 nights x 8 benchmarks x 4 platforms, filtered
    assert all(r['time'] >= datetime.datetime(2017, 2, 14) and r['bytes'] > 2 ** 30 for r in rows)
    root, n = tokio.write_perflogs(DATA, str(tmp_path))
    assert n == len(rows)
    history = replay.load(os.path.join(root, 'edison', 'scratch2'))
    want = sorted(r['bw'] for r in rows if r['partition'] == 'scratch2')
    got = sorted(float(x) for x in history.col['bw_MiBps'])
    assert len(got) == len(want) and np.allclose(got, want, rtol=1e-9)


def _days(n, start='2017-03-01'):
    d0 = datetime.date.fromisoformat(start)
    return np.array([(d0 + datetime.timedelta(days=i)).isoformat() for i in range(n)],
                    dtype='datetime64[D]').astype(np.int64)


def test_a_sustained_degradation_is_one_region_and_a_short_dip_none():
    rng = np.random.default_rng(3)
    v = np.log(1000 * np.exp(rng.normal(0, 0.03, 120)))
    v[50:70] += math.log(0.7)                       # 20 days at -30 %
    regions, below = score.sma_regions(_days(120), v)
    assert len(regions) == 1
    a, b = regions[0]
    assert abs(a - _days(120)[50]) <= 7 and b - a + 1 >= 14
    v2 = np.log(1000 * np.exp(rng.normal(0, 0.03, 120)))
    v2[50:54] += math.log(0.7)                      # four nights: no region
    assert score.sma_regions(_days(120), v2)[0] == []


def test_a_step_that_lasts_is_counted_once_a_dip_is_not():
    rng = np.random.default_rng(4)
    v = np.log(1000 * np.exp(rng.normal(0, 0.03, 60)))
    v[30:] += math.log(0.5)
    assert score.steps(v) == [30]
    w = np.log(1000 * np.exp(rng.normal(0, 0.03, 60)))
    w[30:33] += math.log(0.5)                       # three nights only
    assert score.steps(w) == []


def test_the_bound_rules_catch_a_step_and_count_every_dip_they_fire_on():
    rng = np.random.default_rng(5)
    days = _days(90)
    step = np.log(1000 * np.exp(rng.normal(0, 0.03, 90)))
    step[60:] += math.log(0.5)
    dip = np.log(1000 * np.exp(rng.normal(0, 0.03, 90)))
    dip[30:32] += math.log(0.5)                     # two nights, then back
    one = score.run_rule_bound([(days, step), (days, dip)], nights=1, need=1)
    three = score.run_rule_bound([(days, step), (days, dip)], nights=3, need=3)
    assert one[1:] == (1, 1) and three[1:] == (1, 1)   # the step red within 3 nights either way
    assert one[0] == pytest.approx(30 * 2 / 90)        # a night alone fires on the dip too
    assert three[0] == pytest.approx(30 * 1 / 90)      # three in a row: the step only


def test_pages_count_a_change_once_and_a_group_with_its_members():
    s = score.Series(('x',), ['2017-03-0%d' % i for i in range(1, 8)], np.zeros(7))
    for n in s.nights:
        s.status[n] = 'ok'
    day = int(np.datetime64('2017-03-03', 'D').astype(np.int64))
    red = {'2017-03-03': {day}, '2017-03-04': {day, day + 1}, '2017-03-06': {day}}
    out = score.platform_scores([s], red)
    assert out['red'] == 3 and out['pages'] == 2     # again on the 6th: not red on the 5th


def _write(path, nights, bw):
    lines = [tokio.HEADER]
    for night, value in zip(nights, bw):
        when = datetime.datetime.combine(night, datetime.time(2, 0))
        row = {'system': 'site', 'partition': 'fs', 'bench': 'ior_fpp_write', 'check': 'IOR',
               'params': 'backend=posix,bench=ior_fpp_write,mode=fpp', 'phase': 'write',
               'time': when, 'bytes': 2.0 ** 34, 'bw': value, 'jobid': '1', 'state': {}}
        lines.append(tokio.line(row))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as fh:
        fh.write('\n'.join(lines) + '\n')


def test_a_step_red_seven_nights_is_accepted_and_the_nights_after_are_green(tmp_path):
    rng = np.random.default_rng(5)
    nights = [datetime.date(2017, 1, 1) + datetime.timedelta(days=i) for i in range(60)]
    bw = 20000 * np.exp(rng.normal(0, 0.03, 60))
    bw[30:] *= 0.5
    _write(str(tmp_path / 'perflogs' / 'site' / 'fs' / 'IOR.log'), nights, bw)
    history = replay.load(str(tmp_path / 'perflogs'))
    findings = replay.judge_partition(history, 'site', 'fs', {})
    red = sorted(f['night'] for f in findings if f['scope'] == 'series'
                 and f['status'] == 'regression')
    assert red[0] == nights[32].isoformat()          # the third low night
    assert len(red) == replay.ACCEPT_AFTER           # accepted: green from then on
    assert all(f['since'] == nights[30].isoformat() for f in findings
               if f['status'] == 'regression')


def test_a_step_is_dated_at_its_real_onset_not_at_a_dip_or_across_a_gap():
    rng = np.random.default_rng(8)
    v = np.log(1000 * np.exp(rng.normal(0, 0.03, 60)))
    v[30:] += math.log(0.3)
    v[28] += math.log(0.5)                          # a one-night dip, a normal night, the drop
    assert score.steps(v) == [30]
    days = _days(60).copy()
    days[31:] += 20                 # 20 days without runs after its first low night: after them
    assert score.steps(v, days) == [31]
    assert score.steps(v, _days(60)) == [30]
