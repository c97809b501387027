"""Scores of a verdict on a year of nights, per platform (a system's partition): the measures of
issue 44, each defined here once.

- judged nights: nights with a judged series of the platform;
- red night: a `regression` finding of the platform that night; page: a red night for a change
  that was not red the night before (a change: red findings whose `since` lie within 2 nights of
  each other are one, as a group finding and its members are);
- sustained degradation (the paper's regions: Lockwood et al., SC18): per series, a maximal run
  of nights on which the centred 14-day moving average of its bandwidth is below the centred
  49-day one, spanning at least 14 days, the mean bandwidth of its nights at least 15 % below the
  49-day average over them; flagged when the series is shown `degraded` or red on one of its
  first 7 measured nights (a series with fewer than 7 nights before it is not counted); chance:
  the same number of flagged nights of the series placed at random among its judged nights
  (and, `onset`, its flagged runs of nights placed at random);
- step that lasts: the first night s of a series whose 7 nights from s hold at least 6 that are
  30 % or more below the median of the 14 nights before s (s itself among them); caught when the
  series is red on one of its first 3 measured nights from s.
"""
import numpy as np

RED, FLAG = ('regression',), ('regression', 'degraded')


def _days(labels):
    return np.array(labels, dtype='datetime64[D]').astype(np.int64)


def sma_regions(days, values, short=14, long=49, min_days=14, depth=0.15):
    """[(first day, last day)] of a series' sustained degradations (module docstring)."""
    v = np.exp(values)

    def sma(width):
        h = width / 2.0
        return np.array([v[(days >= x - h) & (days < x + h)].mean() for x in days])
    s, lo = sma(short), sma(long)
    below = s < lo
    out, i = [], 0
    while i < len(days):
        if not below[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(days) and below[j + 1]:
            j += 1
        if days[j] - days[i] + 1 >= min_days and 1 - v[i:j + 1].mean() / lo[i:j + 1].mean() >= depth:
            out.append((days[i], days[j]))
        i = j + 1
    return out, below


def steps(values, days=None, drop=0.30, after=7, before=14, need=6, gap=10):
    """Positions of a series' steps that last (module docstring), dated at their real onset: the
    first of two low nights in a row, not a one-night dip before the drop, nor a low night before
    a gap of more than ``gap`` days without runs (a maintenance: the level fell across it)."""
    out, last = [], -99
    lim = np.log1p(-drop)
    for i in range(before, len(values) - after + 1):
        b = np.median(values[i - before:i])
        low = values[i:i + after] - b < lim
        if not (low[0] and low[1]) or low.sum() < need:
            continue
        if days is not None and days[i + 1] - days[i] > gap:
            continue
        if i - last > after:
            out.append(i)
        last = i
    return out


def lasting(values, i, drop=0.25, before=14, later=(21, 35)):
    """Does the step from i last: the median of its nights 21-34 still ``drop`` below the median
    of the 14 before it?"""
    rest = values[i + later[0]:i + later[1]]
    return bool(rest.size) and np.median(rest) - np.median(values[i - before:i]) < np.log1p(-drop)


def third_low(values, i, drop=0.30, before=14):
    """The position of the step's third night 30 % below the median of the 14 before it."""
    lows = np.flatnonzero(values[i:] - np.median(values[i - before:i]) < np.log1p(-drop))
    return i + int(lows[min(2, lows.size - 1)])


class Series:
    """One series of a platform: its nights, levels and statuses, night by night."""

    def __init__(self, key, nights, values):
        self.key, self.nights, self.values = key, list(nights), np.asarray(values, float)
        self.days = _days(self.nights)
        self.status = {}            # night -> status
        self.since = {}             # night -> since (red)
        self.accepted = []          # nights from which an acceptance of its applies

    def judged(self):
        return np.array([n in self.status for n in self.nights])

    def flagged(self, which=FLAG):
        return np.array([self.status.get(n) in which for n in self.nights])


def _chance(flag, judged, window):
    """Expected hits of a window of ``window`` judged nights by ``flag``'s nights placed at random
    (nights) and by its runs placed at random (onsets)."""
    n = max(int(judged.sum()), 1)
    f = flag[judged]
    p = f.sum() / n
    runs = int(f[0]) + int((~f[:-1] & f[1:]).sum()) if f.size else 0
    return 1 - (1 - p) ** window, 1 - (1 - window / n) ** runs


def platform_scores(series, red_changes, group=True):
    """Scores of one platform. ``series``: [Series]; ``red_changes``: {night: {since day}} of every
    red finding of the platform (series and groups); ``group`` False: {night: {change id}}, each
    change its own (a verdict that does not group its findings)."""
    nights = sorted({n for s in series for n in s.status})
    pages, prev = 0, set()
    for night in nights:
        cur = red_changes.get(night, set())
        if (any(all(abs(c - q) > 2 for q in prev) for c in cur) if group else cur - prev):
            pages += 1
        prev = cur
    red_nights = sum(1 for n in nights if red_changes.get(n))
    flag_nights = len({n for s in series for n in s.nights if s.status.get(n) in FLAG})
    out = dict(judged=len(nights), pages=pages, red=red_nights, flagged=flag_nights,
               regions=0, caught=0, chance=0.0, chance_onset=0.0, delays=[], red_outside=0,
               steps=0, steps_red=0, outside=0, outside_shown=0, step_rows=[])
    for s in series:
        judged, flag, red = s.judged(), s.flagged(), s.flagged(RED)
        regions, below = sma_regions(s.days, s.values)
        for a, b in regions:
            first = np.flatnonzero(s.days >= a)[:7]
            if np.flatnonzero(s.days < a).size < 7:
                continue            # fewer than 7 nights before it: no verdict could judge it
            out['regions'] += 1
            hit = [i for i in first if flag[i]]
            if hit:
                out['caught'] += 1
                out['delays'].append(int(s.days[hit[0]] - a))
            p_night, p_onset = _chance(flag, judged, first.size)
            out['chance'] += p_night
            out['chance_onset'] += p_onset
        out['red_outside'] += int((red & ~below).sum())
        inside = np.zeros(len(s.days), dtype=bool)
        for a, b in regions:
            inside |= (s.days >= a) & (s.days <= b)
        out['outside'] += int((judged & ~inside).sum())
        out['outside_shown'] += int((judged & ~inside & flag).sum())
        for i in steps(s.values, s.days):
            out['steps'] += 1
            out['steps_red'] += bool(red[i:i + 3].any())
            out['step_rows'].append(_step_row(s, i, red))
    return out


def _step_row(s, i, red):
    """One step for the bench's list: onset, size, the statuses of its ten nights, whether it lasts,
    and for a lasting one: red by its third low night, and its nights shown ``ok`` from then until
    accepted (the night an acceptance that matches it applies from) or 35 nights."""
    third = third_low(s.values, i)
    size = float(np.expm1(np.median(s.values[i:i + 7]) - np.median(s.values[i - 14:i])))
    letters = ''.join(LETTER.get(s.status.get(n), '.') for n in s.nights[i:i + 10])
    row = dict(key=s.key, onset=s.nights[i], size=size, statuses=letters,
               lasting=lasting(s.values, i), red_by_third=bool(red[i:third + 1].any()),
               ok_after=0, nights_after=0)
    if row['lasting']:
        end = min(i + 35, len(s.nights))
        later = [a for a in s.accepted if a > s.nights[third]]
        if later:
            end = min(end, int(np.searchsorted(s.nights, later[0])))
        shown = [s.status.get(n) for n in s.nights[third + 1:end]]
        row['ok_after'] = sum(x == 'ok' for x in shown)
        row['nights_after'] = len(shown)
    return row


LETTER = {'regression': 'R', 'degraded': 'd', 'noisy': 'n', 'ok': 'o', 'improvement': '+',
          'insufficient history': 'i'}


def per30(x, judged):
    return 30.0 * x / max(judged, 1)


def run_rule_red(y, drop=0.30, window=14, nights=3, need=3):
    """Per night: red by the rule of run_rule_bound."""
    lim = np.log1p(-drop)
    red = np.zeros(len(y), dtype=bool)
    for j in range(window + nights - 1, len(y)):
        s = j - nights + 1
        low = y[s:j + 1] - np.median(y[s - window:s]) < lim
        red[j] = low[-1] and low.sum() >= need
    return red


def run_rule_bound(series, drop=0.30, window=14, nights=3, need=3):
    """What a rule that sees only the nights so far could reach on steps: red when ``need`` of the
    last ``nights`` nights (tonight one) lie ``drop`` or more below the median of the ``window``
    nights before them — the steps' own definition used as a rule. ``series``: [(days, values)]
    of one platform. Returns (onsets per 30 nights, steps red within 3 nights, steps); an onset is
    a first red night, counted once for those whose runs began within 2 days of each other across
    series (as a page is), with no acceptance (every dip's onset counts)."""
    onsets, caught, total, days_all = [], 0, 0, set()
    for days, y in series:
        days_all |= set(days.tolist())
        red = run_rule_red(y, drop, window, nights, need)
        onsets += [days[j - nights + 1] for j in np.flatnonzero(red) if not red[j - 1]]
        st = steps(y, days)
        total += len(st)
        caught += sum(bool(red[i:i + 3].any()) for i in st)
    pages, last = 0, None
    for day in sorted(onsets):
        pages += last is None or day - last > 2
        last = day
    return per30(pages, len(days_all)), caught, total
