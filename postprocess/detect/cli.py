"""``detect``: every series and group judged night by night (postprocess/detect/suite.py);
``verdict``: what that means for tonight's run, with the confirmation re-run
(postprocess/detect/verdict.py)."""
import glob
import json
import os
import sys

from postprocess.accept import apply as accepted
from postprocess.common import atomic
from postprocess.common.errors import UsageError
from postprocess.common.findings import group_label, is_many
from postprocess.common.jsonfile import read_json
from postprocess.common.units import value_unit
from postprocess.detect import judging, options
from postprocess.detect.options import DEFAULTS
from postprocess.history.cli import add_history_args, print_warnings, query_of


def register(subparsers):
    p = subparsers.add_parser('detect', help='judge every series and group night by night: '
                                             'steps (red), degraded levels, noisy nights')
    add_history_args(p)
    p.add_argument('--value', choices=['bw_MiBps', 'efficiency'], default='bw_MiBps',
                   help='judge bandwidth, or bandwidth / same-night fio baseline')
    p.add_argument('--all-nights', action='store_true',
                   help='report every night, not only the latest of each series (the same '
                        'judgement as the nightly gave each night)')
    p.add_argument('--json', metavar='FILE', help='also write the findings as JSON (atomically)')
    _runs_arg(p)
    _set_arg(p)
    p.set_defaults(func=run)
    v = subparsers.add_parser('verdict', help="tonight's verdict for ci/nightly.sh from detect's "
                                              'JSON, and the confirmation re-run')
    v.add_argument('--detect', required=True, metavar='FILE', help="detect's --json output")
    v.add_argument('--report', required=True, metavar='FILE', help="tonight's ReFrame report.json")
    v.add_argument('--json', required=True, metavar='FILE', help='verdict document (atomically)')
    v.add_argument('--rerun-list', metavar='FILE',
                   help="write the ReFrame -n selectors (/hash) of the checks behind tonight's far "
                        'nights (a re-run that reads them low too makes each a step)')
    v.add_argument('--rerun-runs', metavar='FILE',
                   help='with --rerun-list: write how many whole runs of those checks (ReFrame '
                        '--repeat) give --confirm-repeat repetitions each')
    v.add_argument('--confirm-repeat', type=int, default=10, metavar='N',
                   help='repetitions the confirmation re-run wants of each check (default 10)')
    v.add_argument('--confirm-perflogs', metavar='DIR',
                   help="the re-run's perflog directory: judge tonight again with it as data "
                        '(needs the history and --system)')
    _runs_arg(v)
    _set_arg(v)
    add_history_args(v)
    v.set_defaults(func=run_verdict)


def _runs_arg(p):
    p.add_argument('--runs', metavar='DIR',
                   help="the nightly's run directories (RESULTS/runs): their confirmation re-runs "
                        '(RUN/confirm/perflogs) are data of their nights')


def _set_arg(p):
    p.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                   help=f'a detection setting for a trial (docs/verdicts.md): '
                        f'{", ".join(sorted(DEFAULTS))}')


def settings(args):
    """{name: value} of --set NAME=VALUE (bad usage: one line)."""
    return options.parse(args.set)


def rerun_records(runs_dir, exclude=None):
    """Perflog run records of every run directory's confirmation re-run under ``runs_dir``."""
    from postprocess.history.perflog import read_perflogs
    dirs = sorted(glob.glob(os.path.join(runs_dir, '*', 'confirm', 'perflogs')))
    if exclude:
        dirs = [d for d in dirs if os.path.realpath(d) != os.path.realpath(exclude)]
    if not dirs:
        return []
    runs, _ = read_perflogs(dirs)
    return runs


def _reruns(args, extra=(), exclude=None):
    """Re-run records under --runs (but ``exclude``), and ``extra`` ones."""
    return (rerun_records(args.runs, exclude) if args.runs else []) + list(extra)


def run(args):
    query, opts = query_of(args), settings(args)
    history, warnings = judging.history_to_judge(query, opts, args.all_nights)
    # what changed since the last good night (postprocess/why/), and the machine's state (the
    # history table's column), of each finding shown
    findings, shown = judging.judge(
        history, accepted.for_query(query), settings=opts, reruns=_reruns(args),
        value=args.value, latest_only=not args.all_nights,
        show=None if args.all_nights else latest_per_series, why=True, state=True)
    if args.value == 'efficiency' and not findings:
        print('warning: no efficiency values: no fio baseline runs (backend=fio) in these '
              'sessions', file=sys.stderr)
    for f in shown:
        print(format_finding(f))
        if f.get('why'):
            print(f'    {f["why"]["line"]}')
    if args.json:
        atomic.write_text(args.json, json.dumps(findings, indent=1, default=str) + '\n')
    regressions = sum(f['status'] == 'regression' for f in shown)
    print(f'{len(shown)} findings, {regressions} regression(s)', file=sys.stderr)
    print_warnings(warnings)
    return 1 if regressions else 0


def run_verdict(args):
    from postprocess.detect import verdict
    from postprocess.history.perflog import read_perflogs
    opts = settings(args)               # bad usage before anything is read
    findings = read_json(args.detect, 'detect JSON')
    report = read_json(args.report, 'ReFrame report')
    if not isinstance(findings, list) or not isinstance(report, dict):
        raise UsageError(f"unexpected content in '{args.detect}' or '{args.report}'")
    tonight = verdict.scope_tonight(findings, report)
    stage, warnings = 'none', []
    if args.confirm_perflogs:
        if not (args.perflogs or args.store or args.db) or not args.system:
            raise UsageError('--confirm-perflogs needs the history (--store DIR, --perflogs DIR '
                             'or --db FILE) and --system NAME')
        if not os.path.isdir(args.confirm_perflogs):
            raise UsageError(f"no such directory: --confirm-perflogs '{args.confirm_perflogs}'")
        tonight_runs, diag = read_perflogs(args.confirm_perflogs)
        for message in diag:
            print(f'warning: {message}', file=sys.stderr)
        query = query_of(args)
        history, warnings = judging.history_to_judge(query, opts)
        again = judging.judge(history, accepted.for_query(query), settings=opts,
                              reruns=_reruns(args, [r for r in tonight_runs
                                                    if r['system'] == args.system],
                                             exclude=args.confirm_perflogs)).findings
        tonight = verdict.confirm(tonight, again)
        stage = 'done'
    elif any(verdict.wants_rerun(f) for f in tonight):
        stage = 'pending' if args.rerun_list else 'none'
    if args.rerun_list:
        targets = verdict.rerun_targets(tonight, report) if stage == 'pending' else []
        atomic.write_text(args.rerun_list, ''.join(t + '\n' for t in targets))
        if args.rerun_runs:
            runs = verdict.rerun_runs(tonight, report, max(args.confirm_repeat, 1)) if targets else 0
            atomic.write_text(args.rerun_runs, f'{runs}\n')
    doc = verdict.summary(tonight, stage)
    atomic.write_text(args.json, json.dumps(doc, indent=1, default=str) + '\n')
    for f in doc['findings']:
        note = f' [{f["confirmation"]}]' if f.get('confirmation') else ''
        print(f'nightly verdict: {format_finding(f)}{note}')
    print(f'nightly verdict: {doc["status"]} ({doc["regressions"]} regression(s), '
          f'{doc["degraded"]} degraded, {doc["noisy"]} noisy, {doc["judged"]} judged; '
          f'confirmation {stage})')
    print_warnings(warnings)
    return doc['exit']


def _pct(x):
    return 'n/a' if x is None else f'{x:+.1%}'


def format_finding(f):
    since = f' since {f["since"]}' if f.get('since') else ''
    busy = ' (fio fell too: the filesystem was busy)' if f.get('filesystem_busy') else ''
    if is_many(f):
        fio = f'; fio {_pct(f["fio_change"])}' if f.get('fio_change') is not None else ''
        subject = (group_label(f) if f['scope'] == 'group' else
                   'all checks' if f['scope'] == 'system' else 'all iobench checks (stack)')
        moved = f', {f["moved"]} of {f["members"]} fell' if f.get('members') and \
            f['status'] in ('regression', 'degraded', 'noisy') else ''
        what = (f'{subject}: median member {_pct(f["change"])}{since} '
                f'({f["history_nights"]} usual nights{moved}){fio}')
        return (f'{f["status"].upper():22s} {f["night"]} {f["system"]}:{f["partition"]} '
                f'{f["phase"]}: {what}{busy}')
    scale, unit = value_unit(f['params'])
    unit = f' {unit}' if scale != 1.0 else ''      # empty files: operations/s (common/units.py)
    if f.get('change') is None or f.get('expected_median') is None:
        versus = f'(n={f["n"]}; {f["history_nights"]} usual nights)'
    else:
        versus = (f'vs usual {f["expected_median"] * scale:.4g}{unit} ({_pct(f["change"])}'
                  f'{since}, n={f["n"]}, {f["history_nights"]} usual nights)')
    outl = f' outliers={f["outliers"]}' if f.get('outliers') else ''
    return (f'{f["status"].upper():22s} {f["night"]} {f["system"]}:{f["partition"]}+{f["environ"]} '
            f'{f["check"]} [{f["params"]}] {f["phase"]}: median {f["median"] * scale:.4g}{unit} '
            f'{versus}{outl}{busy}')


def latest_per_series(findings):
    latest = {}
    for f in findings:
        latest[(f['system'], f['partition'], f['environ'], f['check'], f['params'],
                f['phase'])] = f
    return sorted(latest.values(), key=lambda f: (f['scope'] == 'series', f['check'],
                                                  f['params'], f['phase']))
