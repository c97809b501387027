"""``summary``: the last thing a run prints -- counts, what needs attention, where the page is.

    python -m postprocess summary --run RUN_DIR

reads RUN_DIR/report.json (ReFrame), RUN_DIR/post/detect.json (findings) and
RUN_DIR/post/verdict.json (tonight's confirmed flags, written by ci/nightly.sh), RUN_DIR/reframe.out
(skip reasons), each when present, and points at RUN_DIR/post/report/index.html. Exit status 1
when no test case ran (no report, or an empty one): it cannot judge, and says so.
"""
import os
import pathlib

from postprocess.common.findings import is_many, many_label
from postprocess.common.units import value_unit
from postprocess.report import verdict
from postprocess.why import text as why_text

LABEL = {'regression': 'REGRESSION', 'system': 'SYSTEM-WIDE', 'stack': 'I/O STACK',
         'group': 'GROUP', 'failed': 'FAILED', 'degraded': 'DEGRADED', 'noisy': 'NOISY NIGHT'}
MAX_LINES = 25   # per list: a night with 300 failures is one problem, not 300 lines to scroll


def register(subparsers):
    p = subparsers.add_parser('summary', help="a run's verdict for the terminal: passed/failed/"
                                              'skipped, regressions, failures, the report path')
    p.add_argument('--run', required=True, metavar='RUN_DIR',
                   help='run directory (report.json, post/detect.json, post/report/index.html)')
    p.add_argument('--findings', metavar='FILE',
                   help='detect findings JSON (default: RUN_DIR/post/detect.json if present)')
    p.add_argument('--page', metavar='HTML',
                   help='report page to point at (default: RUN_DIR/post/report/index.html)')
    p.set_defaults(func=run)


def _change(a):
    return '' if a.get('change') is None else f'{a["change"]:+.1%}'


def format_line(a):
    label = LABEL[a['kind']]
    short = verdict.short_params(a.get('params', ''), a['check'])
    what = f'{verdict.check_class(a["check"])} {short}'
    if a['kind'] == 'failed':
        if not a.get('params'):
            what = a['check']
        phase = f' in {a["phase"]}' if a.get('phase') else ''
        return f'  {label:11s} {what}{phase}: {a["reason"]}'
    median = ''
    scale, unit = value_unit(a.get('params'))      # empty files: ops/s (common/units.py)
    where = verdict.partition_sizes(a) or a.get('partition', '')
    if is_many(a):       # its medians are ratios to the history, not MiB/s
        what = f'{a["system"]}:{where} {many_label(a)}'
    elif len(a.get('partitions') or ()) > 1:
        what = f'{what} on {a["system"]}:{where}'
    elif a.get('median') is not None and a.get('expected_median') is not None:
        median = f' ({a["median"] * scale:.4g} vs {a["expected_median"] * scale:.4g} {unit} usual)'
    elif a.get('median') is not None and a.get('history_median') is not None:
        median = f' ({a["median"] * scale:.4g} vs {a["history_median"] * scale:.4g} {unit})'
    since = f', since {a["since"]}' if a.get('since') else ''
    if a['kind'] == 'noisy':
        since = (', fio fell too: the filesystem was busy' if a.get('filesystem_busy') else
                 ', its re-run read it usual again' if a.get('confirmation') == 'not reproduced'
                 else ', one night')
    change = '' if len(a.get('partitions') or ()) > 1 else f' {_change(a)}'
    return f'  {label:11s} {what} {a.get("phase", "")}{change}{median}{since}'.rstrip()


def case_count(counts):
    """'50 test cases (1 build)': ReFrame's count of what it ran ("Ran 50/50 test case(s)"), the
    passing iobench build among them, so the two numbers a person compares agree."""
    total = sum(v for k, v in counts.items() if k != 'builds')
    builds = counts.get('builds', 0)
    return f'{total} test case{"s" if total != 1 else ""}' + \
        (f' ({builds} build{"s" if builds != 1 else ""})' if builds else '')


def nothing_ran(result):
    """No test case counted (no ReFrame report, or one that ran nothing): no verdict to give."""
    return not sum(v for k, v in result['counts'].items() if k != 'builds')


def render(result, page=None):
    c = result['counts']
    lines = [f'ioregress: {case_count(c)}: {c["passed"]} passed, {c["failed"]} failed, '
             f'{c["skipped"]} skipped' + (f', {c["other"]} other' if c['other'] else '')]
    attention = result['attention']
    if nothing_ran(result) and not attention:
        # fail closed: "nothing needs attention" would be said of a night that measured nothing
        lines.append('cannot judge: no test case ran, so nothing is known of this run')
    elif attention:
        lines.append(f'{len(attention)} need{"s" if len(attention) == 1 else ""} attention:')
        for a in attention[:MAX_LINES]:
            lines += [format_line(a)] + why_text.terminal_lines(a)   # postprocess/why: what changed
        if len(attention) > MAX_LINES:
            lines.append(f'  ... and {len(attention) - MAX_LINES} more (see the report)')
    else:
        lines.append('nothing needs attention: no regression, no failure')
    notes = result.get('notes') or []
    if notes:
        lines.append(f'not red tonight ({len(notes)}): levels below their usual for a few '
                     'nights, single nights far off')
        lines += [format_line(a) for a in notes[:MAX_LINES]]
        if len(notes) > MAX_LINES:
            lines.append(f'  ... and {len(notes) - MAX_LINES} more (see the report)')
    if result['improvements']:
        lines.append(f'{len(result["improvements"])} improvement(s) (in the report)')
    if result.get('reach'):
        lines.append(result['reach'])       # what a quiet night could have shown (report/reach.py)
    reasons = {}
    for s in result['skipped']:
        reasons.setdefault(s['reason'] or 'reason not recorded', []).append(s['check'])
    for reason, checks in sorted(reasons.items(), key=lambda kv: -len(kv[1]))[:5]:
        lines.append(f'skipped {len(checks)}: {reason}')
    if page:
        lines.append(pathlib.Path(os.path.abspath(page)).as_uri() if os.path.exists(page)
                     else f'no report page ({page} not written)')
    return '\n'.join(lines)


def run(args):
    run_dir = args.run
    if not os.path.isdir(run_dir):
        from postprocess.common.errors import UsageError
        raise UsageError(f"no such run directory '{run_dir}'")
    report = os.path.join(run_dir, 'report.json')
    cases = verdict.load_cases(report) if os.path.exists(report) else None
    findings_path = args.findings or os.path.join(run_dir, 'post', 'detect.json')
    findings = (verdict.load_findings(findings_path)
                if args.findings or os.path.exists(findings_path) else [])
    skipped_why = verdict.skip_reasons(os.path.join(run_dir, 'reframe.out'))
    tonight_path = os.path.join(run_dir, 'post', 'verdict.json')
    tonight = verdict.load_verdict(tonight_path) if os.path.exists(tonight_path) else None
    result = verdict.build(findings, cases, skipped_why, tonight)
    if tonight and tonight.get('confirmation') == 'pending':
        print('note: the confirmation re-run did not finish: flags are not confirmed yet')
    if cases is None:
        print(f'note: no ReFrame report in {run_dir}: counts are unknown')
    page = args.page or os.path.join(run_dir, 'post', 'report', 'index.html')
    print(render(result, page))
    from postprocess.accept.page import summary_lines     # accepted changes (postprocess/accept/)
    for line in summary_lines(findings):
        print(line)
    return 1 if nothing_ran(result) else 0
