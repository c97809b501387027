"""The verdict's settings, each with its default and why (docs/verdicts.md has the figures).

In a module of their own so that the command line, the report and the benches can read them
without importing the statistics. ``detect --set NAME=VALUE`` overrides one for a trial.
"""
from postprocess.common.errors import UsageError

DEFAULTS = {
    # The usual level of a night: the median of the `window` measured nights before the run of
    # low nights it belongs to (four weeks of a nightly: long enough that a dip of days cannot
    # move it, short enough to follow a machine that slowly changes).
    'window': 28,
    # Fewer measured nights of usual level than this: `insufficient history` (a site's first week
    # shows its nights, never red).
    'min_nights': 5,
    # A night is *low* when it falls below the usual level by more than `low_spread` lower-tail
    # spreads, and by at least `min_effect`. The lower-tail spread is the distance from the usual
    # level down to the 10th percentile of the usual nights, over 1.28 (a standard deviation for
    # normal noise): a history with busy nights in it has a wide lower tail and asks more of a
    # night before it counts.
    'low_spread': 3.0,
    'min_effect': 0.05,
    # No spread is taken as smaller than this (log units): a few nights that happened to agree are
    # not a promise of 1 %.
    'spread_floor': 0.02,
    # A step (a regression, red): `step_nights` low nights in a run (low nights with never two
    # normal nights in a row between them, tonight low). One low night is a noisy night; on a
    # production filesystem two in a row happen every few weeks and revert.
    'step_nights': 3,
    # A run of nights is judged as a run: its median against the medians of every run of as many
    # nights in a row of its usual history (their lower-tail spread, `low_spread` of them), up to
    # runs of `run_nights` (a longer run against those). A week of nights all 85 % down is far
    # less likely than one such night, and a history of one-night dips does not hide it.
    'run_nights': 7,
    # The falls of runs of k nights are read over the `run_history` nights before a run (each run
    # against the usual level at its own start): three months see a monthly busy spell three times.
    'run_history': 84,
    # Degraded (shown, never red): `degraded_nights` low nights within `degraded_within` nights,
    # tonight one of them.
    'degraded_nights': 2,
    'degraded_within': 5,
    # A *far* night: at least `far_spread` lower-tail spreads below the usual level and below every
    # one of its usual nights. Only a far night is re-run; when its re-run reads low too and fio
    # (the filesystem's own reading) did not fall that night, the night alone is a step: the
    # confirmation re-run stands in for the nights a step would otherwise need.
    'far_spread': 4.0,
    # A run of low nights that began more than `horizon` measured nights ago is the new normal; the
    # nightly reads this many nights (plus `window`), and judging a past night again reads the same.
    'horizon': 60,
    # Groups (a partition's iobench checks, one library's, one check family's) are judged on the
    # median fall of their members when at least `min_group` members ran; when a group has
    # `min_group` members whose median phase lasts `group_seconds` or more, on those only (a phase
    # of a few ms moves more from night to night than a slower stack moves it).
    'min_group': 3,
    'group_seconds': 0.1,
}


def with_overrides(options):
    """DEFAULTS updated with ``options`` (unknown names are a TypeError)."""
    opt = dict(DEFAULTS)
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise TypeError(f'unknown detection option(s): {sorted(unknown)}')
    opt.update({k: v for k, v in options.items() if v is not None})
    return opt


def parse(items):
    """{name: value} of ``--set NAME=VALUE`` items (bad usage: one line)."""
    out = {}
    for item in items:
        name, sep, text = item.partition('=')
        if not sep or name not in DEFAULTS:
            raise UsageError(f"unknown setting '{item}' (known: {', '.join(sorted(DEFAULTS))})")
        kind = type(DEFAULTS[name])
        try:
            out[name] = kind(text)
        except ValueError:
            raise UsageError(f"bad value for {name}: '{text}' (a {kind.__name__})") from None
        if not out[name] > 0:
            raise UsageError(f"{name} must be positive: '{text}'")
    return out
