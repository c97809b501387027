"""``detect``: each night's repetitions vs the recent history of the same key."""
import json
import sys

from postprocess.common import atomic
from postprocess.history import inputs
from postprocess.detect.series import DEFAULTS


def register(subparsers):
    p = subparsers.add_parser('detect', help='flag regressions/improvements of each night against '
                                             'the previous nights (robust statistics)')
    inputs.add_history_args(p)
    p.add_argument('--window', type=int, default=DEFAULTS['window'], help='nights of history')
    p.add_argument('--value', choices=['bw_MiBps', 'efficiency'], default='bw_MiBps',
                   help='judge bandwidth, or bandwidth / same-night fio baseline')
    p.add_argument('--all-nights', action='store_true',
                   help='report every night, not only the latest of each key')
    p.add_argument('--json', metavar='FILE', help='also write the findings as JSON (atomically)')
    p.set_defaults(func=run)


def format_finding(f):
    if f['history_median'] is None:
        versus = f'(n={f["n"]}; {f["history_nights"]} earlier nights)'
    else:
        versus = (f'vs {f["history_median"]:.4g} ({f["change"]:+.1%}, z {f["z"]:+.1f}, '
                  f'n={f["n"]}, {f["history_nights"]} nights)')
    outl = f' outliers={f["outliers"]}' if f['outliers'] else ''
    return (f'{f["status"].upper():22s} {f["night"]} {f["system"]}:{f["partition"]}+{f["environ"]} '
            f'{f["check"]} [{f["params"]}] {f["phase"]}: median {f["median"]:.4g} {versus}{outl}')


def run(args):
    from postprocess.detect.series import detect
    if args.window < 1:
        from postprocess.common.errors import UsageError
        raise UsageError(f"--window must be >= 1, got '{args.window}'")
    history = inputs.load_history(args)
    findings = detect(history, value=args.value, window=args.window,
                      latest_only=not args.all_nights)
    if args.value == 'efficiency' and not findings:
        print('warning: no efficiency values: no fio baseline runs (backend=fio) in these '
              'sessions', file=sys.stderr)
    shown = findings
    if not args.all_nights:
        latest = {}
        for f in findings:
            latest[(f['system'], f['partition'], f['environ'], f['check'], f['params'],
                    f['phase'])] = f
        shown = sorted(latest.values(), key=lambda f: (f['check'], f['params'], f['phase']))
    for f in shown:
        print(format_finding(f))
    if args.json:
        atomic.write_text(args.json, json.dumps(findings, indent=1, default=str) + '\n')
    regressions = sum(f['status'] == 'regression' for f in shown)
    print(f'{len(shown)} findings, {regressions} regression(s)', file=sys.stderr)
    return 1 if regressions else 0
