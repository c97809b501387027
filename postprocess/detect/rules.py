"""One level judged night by night: a function of its nightly levels, its acceptances and its
nights' confirmation re-runs, nothing else (docs/verdicts.md).

A level is one series (one check's phase on one partition) or a group's median fall
(postprocess/detect/groups.py), as log bandwidth per measured night. For a night and a candidate
first night ``s`` of a run, the *usual level* is the median of the ``window`` measured nights
before ``s`` (after the latest acceptance in force), and the *lower-tail spread* the distance from
it down to their 10th percentile over 1.28. Against them a night is

- *low*: below the usual level by more than ``low_spread`` spreads and by ``min_effect``;
- *far*: low, ``far_spread`` spreads down and below every one of the usual nights;

both as Student's t with the usual nights' degrees of freedom (``spreads_for``).

Tonight is then, in this order:

- ``regression`` (a step, red): a run of low nights from ``s`` to tonight (never two normal
  nights in a row inside it, tonight low) holding ``step_nights`` low nights, or a *confirmed*
  night: far, its re-run low too, and fio not low that night. ``since`` = ``s``, the earliest
  such run within ``horizon`` nights;
- ``degraded``: ``degraded_nights`` low nights within ``degraded_within`` nights, tonight one;
- ``noisy``: tonight low, nothing more;
- ``improvement``: the same run rule upwards (the upper-tail spread), shown, never red;
- ``ok``; ``insufficient history`` below ``min_nights`` usual nights.
"""
import collections
import functools
import math

import numpy as np
from scipy import special

NORMAL_Q10 = 1.2816         # the 90th percentile of a standard normal: spread = (B - Q10) / this
INSUFFICIENT = 'insufficient history'
MIN_RUNS = 5           # runs of k nights that do not overlap a usual history needs for their spread

Judgement = collections.namedtuple(
    'Judgement', 'status since change z far busy confirmation reach usual spread history')


class Level:
    """Nightly levels of one series or group: ``t`` night indices (increasing), ``y`` log levels;
    ``rerun`` {position: log level of that night's confirmation re-run}; ``accepted``
    [(since night index, first night index it applies to)]."""

    def __init__(self, t, y, rerun=None, accepted=()):
        self.t = np.asarray(t, dtype=np.int64)
        self.y = np.asarray(y, dtype=np.float64)
        self.rerun = dict(rerun or {})
        self.accepted = sorted(accepted)
        self._usual = {}            # (accepted position, settings) -> _Usual, built once

    def __len__(self):
        return len(self.y)


class _Usual:
    """Usual level, spreads and thresholds of every candidate run start s >= a, computed from
    the first start a night asks for to the last night, at once (a nightly asks from its last
    ``horizon`` nights; a history judged night by night from its first)."""

    def __init__(self, y, a, opt):
        n, K = len(y), opt['run_nights']
        self.y, self.a, self.opt = y, a, opt
        self.B = np.full(n, np.nan)
        self.lo_spread = np.full(n, np.nan)
        self.hi_spread = np.full(n, np.nan)
        # low/high thresholds of the median of a run of k nights (column k, 1..run_nights): a
        # run is judged against runs of as many nights of its usual history, not single nights
        self.lowk = np.full((n, K + 1), np.nan)
        self.highk = np.full((n, K + 1), np.nan)
        self.low, self.high = self.lowk[:, 1], self.highk[:, 1]     # one night (views)
        self.far = np.full(n, np.nan)
        self.nights = np.zeros(n, dtype=np.int64)
        self.done = np.zeros(n, dtype=bool)
        self.done_from = n          # every start from here to the last night is computed
        self._fall_cache = {}

    def need_from(self, lo):
        """Every start from ``lo`` to the last night computed."""
        if lo < self.done_from:
            self.need(lo, self.done_from - 1)
            self.done_from = lo

    def need(self, lo, hi):
        """Compute starts lo..hi (inclusive) not computed yet: those with ``window`` nights
        before them at once (a nightly asks for ~60 starts of every level), the first few alone."""
        opt, y, a = self.opt, self.y, self.a
        w, least = opt['window'], opt['min_nights']
        todo = np.arange(max(lo, a), hi + 1)
        todo = todo[~self.done[todo]]
        if not todo.size:
            return
        self.done[todo] = True
        full = todo[todo - w >= a]
        if full.size:
            refs = np.lib.stride_tricks.sliding_window_view(y, w)[full - w]
            self.nights[full] = w
            if w >= least:
                self._set(full, refs, w)
        for s in todo[todo - w < a]:
            ref = y[a:s]
            self.nights[s] = ref.size
            if ref.size >= least:
                self._set(np.array([s]), ref[None, :], ref.size)

    def _set(self, s, refs, nights):
        """Starts ``s`` from their usual nights ``refs`` (one row each, ``nights`` long)."""
        opt = self.opt
        floor = -math.log1p(-opt['min_effect'])
        rise = math.log1p(opt['min_effect'])
        b = np.median(refs, axis=1)
        q10, q90 = np.quantile(refs, (0.1, 0.9), axis=1)
        lo_sp = np.maximum((b - q10) / NORMAL_Q10, opt['spread_floor'])
        hi_sp = np.maximum((q90 - b) / NORMAL_Q10, opt['spread_floor'])
        self.B[s], self.lo_spread[s], self.hi_spread[s] = b, lo_sp, hi_sp
        low_z = spreads_for(opt['low_spread'], nights)
        self.lowk[s, 1] = b - np.maximum(floor, low_z * lo_sp)
        self.highk[s, 1] = b + np.maximum(rise, low_z * hi_sp)
        far_z = spreads_for(opt['far_spread'], nights)
        self.far[s] = np.minimum(b - np.maximum(floor, far_z * lo_sp), refs.min(axis=1))
        for k in range(2, self.lowk.shape[1]):
            self._set_runs(s, k, floor, rise)

    def _set_runs(self, s, k, floor, rise):
        """Thresholds of a run of k nights from starts ``s``: from the falls of every run of k
        nights in a row of the ``run_history`` nights before s, each against its own usual level
        (a dip of one night moves none of them for k >= 3; a busy week moves several, and a
        monthly busy spell is seen in three months of them)."""
        opt = self.opt
        falls = self._falls(k)
        span = opt['run_history']
        width = span - k + 1
        padded = np.concatenate([np.full(span, np.nan), falls])
        rows = np.lib.stride_tricks.sliding_window_view(padded, width)[s]   # runs ending before s
        count = np.isfinite(rows).sum(axis=1)
        enough = count // k >= MIN_RUNS
        lo, hi = self.lowk[s, k - 1], self.highk[s, k - 1]   # else: the shorter runs' (a median
        self.lowk[s, k], self.highk[s, k] = lo, hi           # of more nights varies less)
        if not enough.any():
            return
        rows, at = rows[enough], s[enough]
        mid, q10, q90 = row_median_quantiles(rows, (0.1, 0.9))
        lo_sp = np.maximum((mid - q10) / NORMAL_Q10, opt['spread_floor'])
        hi_sp = np.maximum((q90 - mid) / NORMAL_Q10, opt['spread_floor'])
        # Student's t on the runs that do not overlap: count // k of them
        z = np.array([spreads_for(opt['low_spread'], int(c)) for c in count[enough] // k])
        b = self.B[at]
        # never asks more of a longer run than of a shorter one
        self.lowk[at, k] = np.maximum(b - np.maximum(floor, z * lo_sp), lo[enough])
        self.highk[at, k] = np.minimum(b + np.maximum(rise, z * hi_sp), hi[enough])

    def _falls(self, k):
        """Per position j: the median of the k nights from j less the usual level at j (the
        median of the ``window`` nights before it, from ``min_nights`` on); NaN before."""
        if k not in self._fall_cache:
            opt, a, y = self.opt, self.a, self.y
            out = np.full(len(y), np.nan)
            mine = y[a:]
            if mine.size >= k:
                usual = trailing_medians(mine, opt['window'])
                usual[:opt['min_nights']] = np.nan
                runs = np.median(np.lib.stride_tricks.sliding_window_view(mine, k), axis=1)
                out[a:a + runs.size] = runs - usual[:runs.size]
            self._fall_cache[k] = out
        return self._fall_cache[k]

    def run_low(self, s, k):
        """The low threshold of the median of a run of ``k`` nights from start(s) ``s``."""
        return self.lowk[s, np.minimum(k, self.lowk.shape[1] - 1)]

    def run_high(self, s, k):
        return self.highk[s, np.minimum(k, self.highk.shape[1] - 1)]


def trailing_medians(x, window):
    """[median of the finite values of x[max(0, m - window):m]] for every m (NaN where none):
    each window sorted (NaN last), its middle read at its own count of finite values."""
    x = np.asarray(x, dtype=np.float64)
    padded = np.concatenate([np.full(window, np.nan), x])
    rows = np.sort(np.lib.stride_tricks.sliding_window_view(padded, window)[:len(x)], axis=1)
    count = np.isfinite(rows).sum(axis=1)
    out = np.full(len(x), np.nan)
    some = np.flatnonzero(count)
    out[some] = _sorted_medians(rows[some], count[some])
    return out


def _sorted_medians(srt, n):
    """The median of each sorted row's first ``n`` values (NaN sorted after them), as numpy's."""
    i = np.arange(len(srt))
    return (srt[i, (n - 1) // 2] + srt[i, n // 2]) / 2.0


def row_median_quantiles(rows, qs):
    """(median, *quantiles qs) of each row's values that are not NaN, equal to numpy's
    ``nanmedian`` and ``nanquantile`` (method 'linear', its interpolation step for step), whose
    2-D forms run one Python call per row (9 of a warm detect's 11 s over 200 series). Every
    row holds a value."""
    srt = np.sort(rows, axis=1)                     # NaN last
    n = (~np.isnan(srt)).sum(axis=1)
    i = np.arange(len(srt))
    out = [_sorted_medians(srt, n)]
    for q in qs:
        virtual = (n - 1) * q
        prev = np.floor(virtual)
        above = virtual >= n - 1                    # numpy takes the last value there
        gamma = virtual - np.where(above, -1.0, prev)
        a = srt[i, np.where(above, n - 1, prev).astype(np.intp)]
        b = srt[i, np.where(above, n - 1, prev + 1).astype(np.intp)]
        diff = b - a
        out.append(np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma))
    return out


def lookback(opt):
    """System nights a judgement may read back over (tonight included): three times what a
    series measured every night needs, so that only a series measured on fewer than one night in
    three is cut by it; the nightly reads exactly these nights, and a night judged again the same."""
    return 3 * (opt['horizon'] + opt['window'] + 1)


@functools.lru_cache(maxsize=None)
def spreads_for(z, nights):
    """The spreads a fall of ``z`` normal standard deviations is worth when the spread was read
    from ``nights`` usual nights: Student's t with ``nights - 1`` degrees of freedom at the same
    tail probability (five nights that agreed prove less than twenty-eight)."""
    return float(-special.stdtrit(max(nights - 1, 1), special.ndtr(-z)))


def _accepted_from(level, m, opt=None):
    """The first position night m may read: after the acceptance in force (0 without one), and
    within the lookback when the lookback binds (a sparse series)."""
    since = None
    for first_night, applies in level.accepted:
        if applies <= level.t[m]:
            since = first_night
    a = 0 if since is None else int(np.searchsorted(level.t, since))
    if opt is not None:
        cut = int(np.searchsorted(level.t, level.t[m] - lookback(opt) + 1))
        if cut > max(a, m - opt['horizon'] - opt['window']):
            a = cut
    return a


def accepted_from_all(level, opt):
    """``_accepted_from(level, m, opt)`` for every position m at once."""
    t = level.t
    a = np.zeros(len(t), dtype=np.int64)
    for first_night, applies in level.accepted:         # sorted: the latest in force wins
        a[t >= applies] = int(np.searchsorted(t, first_night))
    cut = np.searchsorted(t, t - lookback(opt) + 1)
    m = np.arange(len(t))
    binds = cut > np.maximum(a, m - opt['horizon'] - opt['window'])
    return np.where(binds, cut, a)


def judge(level, opt, fio_low=frozenset(), positions=None):
    """[Judgement] for each position in ``positions`` (default: every measured night).
    ``fio_low``: night indices on which the partition's fio was low (the filesystem busy)."""
    positions = range(len(level)) if positions is None else positions
    settings = tuple(opt[k] for k in ('window', 'min_nights', 'spread_floor', 'min_effect',
                                      'low_spread', 'far_spread', 'run_nights',
                                      'run_history'))
    out = []
    for m in positions:
        a = _accepted_from(level, m, opt)
        key = (a, settings)
        if key not in level._usual:
            level._usual[key] = _Usual(level.y, a, opt)
        out.append(_judge_night(level, level._usual[key], a, m, opt, fio_low))
    return out


def _confirmed(level, u, thr_low, thr_far, fio_low):
    """Did night u's re-run reproduce a far fall (and fio stay)?"""
    r = level.rerun.get(u)
    return (r is not None and level.y[u] < thr_far and r < thr_low
            and int(level.t[u]) not in fio_low)


@functools.lru_cache(maxsize=None)
def _upper(k):
    """(k, k) booleans, True on and above the diagonal (night j of a run from start i: j >= i)."""
    return np.triu(np.ones((k, k), dtype=bool))


def _runs(y, thr):
    """Every candidate run start at once: ``low[i, j]``, night j below start i's threshold
    ``thr[i]`` (j >= i; a start without a usual level has none), and ``run[i]``: nights i..end
    are a run (i low, never two normal nights in a row, the last or the one before it low)."""
    inside = _upper(len(y))
    low = (y[None, :] < thr[:, None]) & inside
    normal = ~low & inside
    run = np.diagonal(low) & ~(normal[:, :-1] & normal[:, 1:]).any(axis=1)
    return low, run & (low[:, -1] | (low[:, -2] if len(y) > 1 else False))


def _run_thresholds(us, first, m, upward=False):
    """Each start s in first..m: the threshold of a run of the m - s + 1 nights from s."""
    s = np.arange(first, m + 1)
    return us.run_high(s, m - s + 1) if upward else us.run_low(s, m - s + 1)


def _step_start(y, us, first, m, opt, level=None, fio_low=()):
    """The earliest start s of a run to tonight whose median lies below the threshold of a run of
    its length and that holds ``step_nights`` low nights, or a confirmed night (far, its re-run
    low, fio steady): (s, low nights of the run) or None."""
    thr = _run_thresholds(us, first, m)
    lows, run = _runs(y[first:m + 1], thr)
    for i in np.flatnonzero(run):
        s, low = first + i, lows[i, i:]
        if low.sum() >= opt['step_nights'] and np.median(y[s:m + 1]) < thr[i]:
            return s, low
        if level is not None and level.rerun and any(
                _confirmed(level, s + j, us.low[s], us.far[s], fio_low)
                for j in np.flatnonzero(y[s:m + 1] < us.low[s])):
            return s, y[s:m + 1] < us.low[s]
    return None


def _judge_night(level, us, a, m, opt, fio_low):
    y = level.y
    first = max(a, m - opt['horizon'])
    us.need_from(first)
    history = int(us.nights[m])
    if np.isnan(us.B[m]):
        return Judgement(INSUFFICIENT, None, None, None, False, False, None, None, None, None,
                         history)
    busy = int(level.t[m]) in fio_low
    # a step: a run of nights whose median is as unlikely as a run of its length can be
    step = _step_start(y, us, first, m, opt, level, fio_low)
    if step is not None:
        s, low = step
        change = float(np.median(y[s:m + 1][low])) - us.B[s]
        return _verdict('regression', s, change, us, s, m, level, fio_low, busy, history, opt)
    # degraded: degraded_nights low nights within degraded_within, tonight one of them
    for s in range(max(a, m - opt['degraded_within'] + 1), m + 1):
        if np.isnan(us.B[s]) or not (y[s] < us.low[s] and y[m] < us.low[s]):
            continue
        low = y[s:m + 1] < us.low[s]
        if low.sum() >= opt['degraded_nights']:
            change = float(np.median(y[s:m + 1][low])) - us.B[s]
            return _verdict('degraded', s, change, us, s, m, level, fio_low, busy, history, opt)
    if y[m] < us.low[m]:
        return _verdict('noisy', None, y[m] - us.B[m], us, m, m, level, fio_low, busy, history,
                        opt)
    up_thr = _run_thresholds(us, first, m, upward=True)
    highs, run = _runs(-y[first:m + 1], -up_thr)                 # an improvement: upwards
    for i in np.flatnonzero(run & (highs.sum(axis=1) >= opt['step_nights'])):
        s = first + i
        if np.median(y[s:m + 1]) > up_thr[i]:
            change = float(np.median(y[s:m + 1][highs[i, i:]])) - us.B[s]
            return _verdict('improvement', s, change, us, s, m, level, fio_low, busy, history,
                            opt)
    return _verdict('ok', None, y[m] - us.B[m], us, m, m, level, fio_low, busy, history, opt)


def _verdict(status, s, change, us, ref, m, level, fio_low, busy, history, opt):
    """A Judgement: ``ref`` the run start whose usual level the change is told against."""
    spread = float(us.lo_spread[ref]) if change < 0 else float(us.hi_spread[ref])
    far = bool(level.y[m] < us.far[ref])
    confirmation = None
    if m in level.rerun and far and status != 'improvement':
        confirmation = ('confirmed' if _confirmed(level, m, us.low[ref], us.far[ref], fio_low)
                        else 'filesystem busy' if busy else 'not reproduced')
    return Judgement(status, s, float(change), float(change) / spread, far, busy, confirmation,
                     _reach(level, us, m, opt), float(us.B[ref]), spread, history)


def _reach(level, us, m, opt):
    """The least fall (a relative change, e.g. -0.18) that would make tonight a step: against the
    usual level of the run going on (tonight alone when none), the threshold of a run of its
    length when tonight would be the run's ``step_nights``-th low night, else the far threshold
    (a re-run must then confirm it)."""
    y = level.y
    start, lows = m, 0
    first = max(0, m - opt['horizon'])
    if first < m:
        low, run = _runs(y[first:m], _run_thresholds(us, first, m - 1))
        if run.any():           # a run going on up to last night
            i = int(np.argmax(run))
            start, lows = first + i, int(low[i].sum())
    thr = (us.run_low(start, m - start + 1) if lows + 1 >= opt['step_nights']
           else us.far[start])
    return math.expm1(float(thr - us.B[start]))
