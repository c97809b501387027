"""``compare``: gate an upgrade. Every series of the ``--after`` sessions judged against the
``--before`` sessions with the verdict's statistics (ReFrame's --performance-compare as the model).

    python -m postprocess compare --perflogs DIR [--system S] --before SEL --after SEL [--json F]

The median level of each series' ``--after`` nights is judged against its ``--before`` nights as
the verdict judges a night against its usual level (``postprocess.detect.suite.compare_sides``):
a regression when it is low, below the before nights' median by more than 3 lower-tail spreads
and 5 %. The ``before`` side needs at least ``min_nights`` (5) nights, else the series is
``insufficient history``. Exit 3 when a regression is found (each is named); 4 when it cannot
tell: a series without enough history on the before side, no series at all, or before and after
in one session (runs less than 3 h apart merge); 0 only when every series was judged and none
regressed; 2 bad usage. For before and after in one maintenance window, ``gate`` runs both
stacks side by side instead (docs/gate.md).
"""
import json
import sys

from postprocess.common import atomic
from postprocess.common.errors import UsageError
from postprocess.history import inputs
from postprocess.history.cli import add_history_args, print_warnings, query_of

AFTER = '~after'
#: statuses that are no judgement: the series is not told apart from its history
NOT_JUDGED = ('insufficient history',)


class CannotTell(Exception):
    """The history cannot separate the two sides: one line, exit 4 (never a silent pass)."""


def register(subparsers):
    p = subparsers.add_parser('compare', help='judge every series of --after sessions against '
                                              '--before sessions (exit 3 on a regression, 4 '
                                              'when it cannot tell)')
    add_history_args(p)
    p.add_argument('--before', required=True, metavar='SEL',
                   help='FROM..TO nights, one night, note:TEXT or session:TEXT')
    p.add_argument('--after', required=True, metavar='SEL', help='as --before')
    p.add_argument('--json', metavar='FILE', help='write the comparison as JSON (atomically)')
    p.set_defaults(func=run)


def judge(runs, before_sel, after_sel):
    """(findings of the after night, before nights, after sessions) from session-assigned runs."""
    from postprocess.compare import select
    from postprocess.detect import judging
    from postprocess.history.store import History, assign_sessions
    assign_sessions(runs)
    before = select.sessions(runs, before_sel)
    after = select.sessions(runs, after_sel)
    if not before:
        raise UsageError(f"--before '{before_sel}' selects no session")
    if not after:
        raise UsageError(f"--after '{after_sel}' selects no session")
    both = set(before) & set(after)
    if both:
        raise CannotTell(f"--before and --after share {len(both)} session(s), e.g. "
                         f"'{sorted(both)[0]}' (runs less than 3 h apart are one session; "
                         f"for an A/B in one window use `gate`)")
    nights = sorted(set(before.values()))
    labels = _after_labels(nights, sorted(set(after.values())))
    history = History([r for r in runs if r['session'] in before or r['session'] in after])
    for s in history.sessions:
        if s['id'] in after:
            s['night'] = labels[s['night']]
    label = max(labels.values())
    found = judging.judge(history, after_nights=set(labels.values()),
                          show=lambda judged: [f for f in judged if f['night'] == label]).shown
    _changed(found, runs, before, after)
    return found, nights, sorted(after)


def _after_labels(before_nights, after_nights):
    """{after night: label}: the night itself when every after night is later than the before
    nights, else labels that sort after them in the same order ('<last before>~after001', ...)."""
    if after_nights[0] > before_nights[-1]:
        return {n: n for n in after_nights}
    return {n: f'{before_nights[-1]}{AFTER}{i:03d}' for i, n in enumerate(after_nights, 1)}


def _changed(findings, runs, before, after):
    """Each finding's ``changed``: provenance that differs between its runs on the two sides
    (postprocess/why/provenance.py), e.g. ["HDF5 1.10.8 → 1.12.3"]."""
    from postprocess.why.annotate import matches_finding
    from postprocess.why.provenance import changes
    for f in findings:
        mine = [r for r in runs if r['system'] == f['system'] and r['partition'] == f['partition']
                and matches_finding(r, f)]
        f['changed'] = changes([r['provenance'] for r in mine if r['session'] in before],
                               [r['provenance'] for r in mine if r['session'] in after])


def _row(f):
    from postprocess.report.verdict import short_params
    if f.get('scope') == 'system':
        series = f'{f["system"]}:{f["partition"]} all checks'
    else:
        series = f'{f["system"]}:{f["partition"]}+{f["environ"]} {f["check"]} ' \
                 f'[{short_params(f["params"], f["check"])}]'
    return series


def _fmt(v, spec):
    return '' if v is None else format(v, spec)


def run(args):
    runs, warnings = inputs.load_runs(query_of(args))
    try:
        findings, nights, after = judge(list(runs), args.before, args.after)
    except CannotTell as err:
        print(f'python -m postprocess compare: cannot tell: {err}', file=sys.stderr)
        if args.json:
            atomic.write_text(args.json, json.dumps(
                {'schema': 'ioregress-compare/1', 'before': args.before, 'after': args.after,
                 'status': 'cannot tell', 'exit': 4, 'reason': str(err)}, indent=1) + '\n')
        print_warnings(warnings)
        return 4
    findings.sort(key=lambda f: (f['status'] != 'regression', f.get('scope') != 'system',
                                 f['check'], f['params'], f['phase']))
    regressions = [f for f in findings if f['status'] == 'regression']
    unjudged = [f for f in findings if f['status'] in NOT_JUDGED]
    print(f'compare: before {args.before} ({len(nights)} nights: {nights[0]}..{nights[-1]}), '
          f'after {args.after} ({len(after)} session(s))')
    print(f'{"status":21s} {"change":>8s} {"before":>10s} {"after":>10s} {"p":>8s}  series phase')
    for f in findings:
        before = None if f.get('scope') == 'system' else f.get('expected_median')
        after_v = None if f.get('scope') == 'system' else f.get('median')
        print(f'{f["status"]:21s} {_fmt(f.get("change"), "+.1%"):>8s} {_fmt(before, ".4g"):>10s} '
              f'{_fmt(after_v, ".4g"):>10s} {_fmt(f.get("p"), ".2g"):>8s}  {_row(f)} {f["phase"]}')
    for f in regressions:
        what = '; '.join(f['changed']) or 'nothing recorded differs'
        print(f'REGRESSION {_row(f)} {f["phase"]}: {_fmt(f.get("change"), "+.1%")} after '
              f'{args.after} vs {args.before}; changed: {what}', file=sys.stderr)
    for f in unjudged:
        print(f'CANNOT TELL {_row(f)} {f["phase"]}: {f["status"]}', file=sys.stderr)
    status = 'regression' if regressions else 'cannot tell' if unjudged or not findings else 'ok'
    doc = {'schema': 'ioregress-compare/1', 'before': args.before, 'after': args.after,
           'before_nights': nights, 'after_sessions': after,
           'status': status, 'exit': {'regression': 3, 'cannot tell': 4, 'ok': 0}[status],
           'regressions': [_row(f) + ' ' + f['phase'] for f in regressions],
           'cannot_tell': [_row(f) + ' ' + f['phase'] for f in unjudged],
           'series': [dict(f, series=_row(f), night='after') for f in findings]}
    if args.json:
        atomic.write_text(args.json, json.dumps(doc, indent=1, default=str) + '\n')
    print(f'{len(findings)} series, {len(regressions)} regression(s), {len(unjudged)} not '
          f'judged (too little history): {status}')
    print_warnings(warnings)
    return doc['exit']
