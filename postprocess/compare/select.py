"""Selectors of ``compare --before SEL --after SEL``: which sessions form each side.

    2026-01-01..2026-01-04    nights (session start dates) in a span, inclusive; an open end
                              (``..2026-01-04``, ``2026-01-05..``) or one night ``2026-01-05``
    note:TEXT                 sessions with a run whose site note (ci/nightly.sh --note)
                              contains TEXT
    session:TEXT              sessions whose id (``system:partition@start``) contains TEXT
"""
import datetime

from postprocess.common.errors import UsageError


def _date(text, sel):
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise UsageError(f"bad selector '{sel}': not a night (YYYY-MM-DD) '{text}'") from None


def parse(sel):
    """A predicate on (session id, night, [provenance]) for one selector string."""
    if not sel or not sel.strip():
        raise UsageError(f"empty selector '{sel}'")
    if sel.startswith('note:'):
        text = sel[5:]
        if not text:
            raise UsageError(f"bad selector '{sel}': note:TEXT needs a text")
        return lambda sid, night, provs: any(
            text in str(((p or {}).get('machine') or {}).get('note', '')) for p in provs)
    if sel.startswith('session:'):
        text = sel[8:]
        if not text:
            raise UsageError(f"bad selector '{sel}': session:TEXT needs a text")
        return lambda sid, night, provs: text in sid
    lo, dots, hi = sel.partition('..')
    lo = _date(lo, sel) if lo else '0000-00-00'
    hi = (_date(hi, sel) if hi else '9999-99-99') if dots else lo
    if lo > hi:
        raise UsageError(f"bad selector '{sel}': span ends before it starts")
    return lambda sid, night, provs: lo <= night <= hi


def sessions(runs, sel):
    """{session id: night} of the (session-assigned) runs the selector picks."""
    pred = parse(sel)
    by = {}
    for r in runs:
        by.setdefault(r['session'], (r['session_start'].date().isoformat(), []))[1].append(
            r.get('provenance'))
    return {sid: night for sid, (night, provs) in by.items() if pred(sid, night, provs)}
