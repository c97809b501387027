"""The two verdicts production_replay.py sets ioregress beside, on the same series and nights, each
accepting a change once it has been red for 7 nights (the history restarts at its start):

- a fixed threshold: red when tonight is more than 20 % below the median of the 14 measured nights
  before it (at least 7 of them);
- Apache Otava with its defaults (E-divisive, p 0.001, window 50) over the series up to tonight:
  red when a change point falls on one of the two newest nights and the newer segment is lower.
- rules on the last nights alone: red when 3 of the last 3 (or 2 of the last 2) nights lie 30 %
  or more below the median of the 14 nights before them (the steps' own definition as a rule).
A change is a series' consecutive red nights (fixed, last nights) or its change point (Otava).
"""
import functools
import numpy as np


def fixed(values, drop=0.20, window=14, least=7):
    """{position: (red, since position)} of one series' log levels."""
    out, acc, count, run_start = {}, 0, 0, None
    lim = np.log1p(-drop)
    for m in range(len(values)):
        ref = values[max(acc, m - window):m]
        if ref.size < least:
            continue
        red = values[m] - np.median(ref) < lim
        if not red:
            out[m], run_start, count = (False, None), None, 0
            continue
        run_start = m if run_start is None else run_start
        count += 1
        out[m] = (True, run_start)
        if count >= 7:
            acc, run_start, count = run_start, None, 0
    return out


def last_nights(values, nights=3, need=3, drop=0.30, window=14):
    """{position: (red, since position)}: production_score.run_rule_red, accepting a change after
    7 red nights as the others do (the history restarts at its start)."""
    from bench.production_score import run_rule_red
    out, acc, count, run_start = {}, 0, 0, None
    for m in range(len(values)):
        if m - acc < window + nights - 1:
            continue
        red = bool(run_rule_red(values[acc:m + 1], drop, window, nights, need)[-1])
        if not red:
            out[m], run_start, count = (False, None), None, 0
            continue
        run_start = m - nights + 1 if run_start is None else run_start
        count += 1
        out[m] = (True, run_start)
        if count >= 7:
            acc, run_start, count = run_start, None, 0
    return out


three_of_three = functools.partial(last_nights, nights=3, need=3)
two_of_two = functools.partial(last_nights, nights=2, need=2)


def otava(values, least=7, pvalue=0.001):
    """{position: (red, change point position)} of one series' log levels."""
    from otava.analysis import compute_change_points
    out, acc, counts = {}, 0, {}
    for m in range(len(values)):
        if m - acc + 1 < least:
            continue
        seg = np.exp(values[acc:m + 1])
        points, _ = compute_change_points(list(seg), max_pvalue=pvalue)
        red = None
        for p in points:
            if p.index >= len(seg) - 2 and p.stats.mean_2 < p.stats.mean_1:
                red = acc + int(p.index)
        out[m] = (red is not None, red)
        if red is not None:
            counts[red] = counts.get(red, 0) + 1
            if counts[red] >= 7:
                acc = red
    return out


def judge_all(series_values, method):
    """{key: {position: (red, since)}} for {key: log levels} by ``method`` (fixed or otava), the
    series in parallel on every core."""
    import concurrent.futures
    import os
    keys = list(series_values)
    with concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(method, [series_values[k] for k in keys]))
    return dict(zip(keys, results))
