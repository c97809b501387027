"""The one judging pipeline: a history judged (postprocess/detect/suite.py, the acceptances
applied), its findings marked accepted (postprocess/accept/), and those shown explained: what
changed since the last good night (postprocess/why/annotate.py) and the machine's state that night
(why/state.py). detect, the nightly's verdict, report, compare and the benches judge through
here, so a finding means the same wherever it is shown.
"""
from typing import NamedTuple

from postprocess.detect.options import DEFAULTS


class Judged(NamedTuple):
    findings: list      # every finding judged, sorted by night
    shown: list         # the findings shown, and explained when asked


def history_to_judge(query, settings=None, all_nights=False):
    """(History, warnings) of a HistoryQuery: the nights a judgement of each series' latest night
    looks back over (detect/rules.py ``lookback``), or every night (``all_nights``)."""
    from postprocess.detect.rules import lookback
    from postprocess.history import inputs
    opt = dict(DEFAULTS)
    opt.update(settings or {})
    return inputs.load_history(query, last_nights=None if all_nights else lookback(opt))


def judge(history, acceptances=(), *, settings=None, reruns=(), after_nights=None, show=None,
          why=False, state=False, **detect_args):
    """The Judged findings of ``history``.

    ``acceptances``: records of postprocess/accept/ (``apply.for_query``); ``settings``: detection
    settings over detect/options.py's DEFAULTS; ``reruns``: run records of confirmation re-runs,
    data of their nights; ``detect_args``: suite.detect's (value, latest_only, nights_from,
    every_night). ``after_nights``: instead, each series' after nights judged as one against
    its nights before them (suite.compare_sides: compare). ``show``: which findings are shown
    (default all); ``why``, ``state``: explain those shown."""
    from postprocess.accept import apply as accepted
    settings = settings or {}
    if after_nights is not None:
        from postprocess.detect.suite import compare_sides
        findings = compare_sides(history, after_nights, **detect_args, **settings)
    else:
        from postprocess.detect.levels import read_reruns
        from postprocess.detect.suite import detect
        findings = detect(history, acceptances=acceptances, matches=accepted.matches,
                          reruns=read_reruns(history, list(reruns)) if reruns else None,
                          **detect_args, **settings)
    accepted.mark(findings, acceptances)
    shown = findings if show is None else show(findings)
    if why:
        from postprocess.why.annotate import add_why_from_history
        add_why_from_history(shown, history)
    if state:
        from postprocess.why.state import add_state
        add_state(shown, history)
    return Judged(findings, shown)
