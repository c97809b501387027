"""The night a level shift began: Apache Otava's E-divisive change points (the Hunter algorithm of
Fleming et al., ICPE 2023) over a flagged series' nightly levels.

Detection (suite.py) decides *whether* a series changed, with its own suite-wide error control;
this names *since when*. The pooled window of the test cannot: it reaches back over nights that
merely looked suspect, and one noisy night before the change would become its start. Otava sees the
whole judged span and splits it where the mean steps; of its change points that step the flagged
way inside the test's window (where the evidence says the change is), the best supported one is
the start; with none (one night after a change is often too little) the window's start is.
bench/detection.py counts how often `since` names the true night.
"""
MAX_PVALUE = 0.05           # Otava's significance for a change point (its first pass: 2x)


def change_start(levels, t, direction, fallback):
    """Night index where the change flagged on night ``t`` began, in [fallback, t].

    ``levels``: {night index: level} of the series (log scale, common factor removed);
    ``direction``: -1 for a regression, +1 for an improvement; ``fallback``: the start of the
    test's pooled window, used when Otava finds no change point there that steps the flagged way.
    """
    nights = sorted(u for u in levels if u <= t)
    if len(nights) < 4:
        return fallback
    series = [float(levels[u]) for u in nights]
    # imported here: it pulls in scipy.stats (~1 s), and most nights flag nothing
    from otava.analysis import compute_change_points
    points, _ = compute_change_points(series, window_len=len(series), max_pvalue=MAX_PVALUE)
    inside = [p for p in points if fallback <= nights[int(p.index)] <= t
              and direction * (p.stats.mean_2 - p.stats.mean_1) > 0]
    if not inside:
        return fallback
    # several steps in the window (Otava splits a noisy tail too): the best supported one
    return nights[int(min(inside, key=lambda p: p.stats.pvalue).index)]
