"""``detect``: the night judged as a whole (postprocess/detect/suite.py); ``verdict``: what that
means for tonight's run, with the confirmation re-run (postprocess/detect/verdict.py)."""
import json
import os
import sys

from postprocess.common import atomic
from postprocess.common.findings import flag_key, group_label, is_many
from postprocess.common.jsonfile import read_json
from postprocess.common.units import value_unit
from postprocess.history import inputs
from postprocess.detect.options import DEFAULTS


def register(subparsers):
    p = subparsers.add_parser('detect', help='judge each night as a whole: common factor per '
                                             'partition (scope system), series vs their history, '
                                             'suite-wide error control, persistence')
    inputs.add_history_args(p)
    p.add_argument('--window', type=int, default=DEFAULTS['window'],
                   help=f'nights of clean history (default {DEFAULTS["window"]})')
    p.add_argument('--value', choices=['bw_MiBps', 'efficiency'], default='bw_MiBps',
                   help='judge bandwidth, or bandwidth / same-night fio baseline')
    p.add_argument('--all-nights', action='store_true',
                   help='report every night, not only the latest of each key')
    p.add_argument('--json', metavar='FILE', help='also write the findings as JSON (atomically)')
    p.add_argument('--runs', metavar='DIR',
                   help="the nightly's run directories (RESULTS/runs): flags their confirmation "
                        're-runs did not reproduce never start a change window (nor `since`); a '
                        "refuted factor or group flag's night leaves that level's history")
    p.set_defaults(func=run)
    v = subparsers.add_parser('verdict', help="tonight's verdict for ci/nightly.sh from detect's "
                                              'JSON, and the confirmation re-run')
    v.add_argument('--detect', required=True, metavar='FILE', help="detect's --json output")
    v.add_argument('--report', required=True, metavar='FILE', help="tonight's ReFrame report.json")
    v.add_argument('--json', required=True, metavar='FILE', help='verdict document (atomically)')
    v.add_argument('--rerun-list', metavar='FILE',
                   help='write the ReFrame -n selectors (/hash) of the checks to re-run')
    v.add_argument('--rerun-runs', metavar='FILE',
                   help='with --rerun-list: write how many whole runs of those checks (ReFrame '
                        '--repeat) give --confirm-repeat repetitions each')
    v.add_argument('--confirm-repeat', type=int, default=10, metavar='N',
                   help='repetitions the confirmation re-run wants of each check (default 10)')
    v.add_argument('--confirm-perflogs', metavar='DIR',
                   help="the re-run's perflog directory: judge flags against the same history "
                        '(needs --perflogs and --system)')
    v.add_argument('--runs', metavar='DIR',
                   help="the nightly's run directories, as detect's --runs: a regression going "
                        "on from a change an earlier night's re-run confirmed is not re-run "
                        '(carried); with --confirm-perflogs the history leaves out the nights of '
                        'refuted flags there too')
    inputs.add_history_args(v)
    v.set_defaults(func=run_verdict)


def run_verdict(args):
    from postprocess.common.errors import UsageError
    from postprocess.detect import verdict
    from postprocess.history.perflog import read_perflogs
    findings = read_json(args.detect, 'detect JSON')
    report = read_json(args.report, 'ReFrame report')
    if not isinstance(findings, list) or not isinstance(report, dict):
        raise UsageError(f"unexpected content in '{args.detect}' or '{args.report}'")
    tonight = verdict.scope_tonight(findings, report)
    past = past_unconfirmed(args.runs, args.this_run) if args.runs else None
    verdict.carry_confirmed(tonight, past)
    stage = 'none'
    if args.confirm_perflogs:
        if not (args.perflogs or args.store or args.db) or not args.system:
            raise UsageError('--confirm-perflogs needs the history (--store DIR, --perflogs DIR '
                             'or --db FILE) and --system NAME')
        if not os.path.isdir(args.confirm_perflogs):
            raise UsageError(f"no such directory: --confirm-perflogs '{args.confirm_perflogs}'")
        # the nights the re-run is judged against (the detector's horizon), as run records:
        # years of perflog lines as dicts would not fit in memory
        history_runs = list(inputs.load_history(args, last_nights=DEFAULTS['horizon']).runs)
        from postprocess.accept import apply as accepted      # accepted changes (postprocess/accept/)
        history_runs = accepted.drop_runs(history_runs, accepted.for_args(args))
        confirm_runs, diag = read_perflogs(args.confirm_perflogs)
        confirm_runs = [r for r in confirm_runs if r['system'] == args.system]
        for message in diag:
            print(f'warning: {message}', file=sys.stderr)
        tonight = verdict.confirm(history_runs, confirm_runs, tonight, past)
        stage = 'done'
    elif any(f['status'] == 'regression' and f.get('confirmation') != verdict.CARRIED
             for f in tonight):
        # only a regression is re-run (ci/nightly.sh): an improvement alone waits for no one
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
          f'{doc["unconfirmed"]} unconfirmed, {doc["judged"]} series judged; confirmation '
          f'{stage})')
    return doc['exit']


class PastFlags(dict):
    """{(system, partition, environ, check, params, phase): {night}} of refuted flags;
    ``confirmed``: the same for the flags their re-run reproduced; ``undecided``: the refuted
    ones whose re-run still read half their change, their way (detect/many.py
    Many.mark_refuted: a factor's or group's such night is no burst); ``origin``: the run
    directory (name) whose verdict refuted each (key, night); ``this_run``: the run asking."""

    def __init__(self, this_run=None):
        super().__init__()
        self.confirmed = {}
        self.undecided = {}
        self.origin = {}
        self.this_run = this_run

    def for_tonight(self, night):
        """The flags that hold while ``night`` is judged by ``this_run``: an earlier session's
        refutation of that same night is not this run's (a second nightly on one date, after an
        upgrade, would otherwise have its own flag read `unconfirmed` with no re-run of its own:
        CI 2026-11-28, an HDF5 write -99 % passed so); its flag gets its own re-run."""
        if not self.this_run:
            return self
        out = PastFlags(self.this_run)
        out.confirmed = self.confirmed
        for into, among in ((out, self), (out.undecided, self.undecided)):
            for key, nights in among.items():
                kept = {n for n in nights
                        if n != night or self.origin.get((key, n)) == self.this_run}
                if kept:
                    into[key] = kept
        out.origin = self.origin
        return out


def _half_again(f):
    """Did the re-run of a flag it did not confirm still read at least half its change, the same
    way?"""
    a, b = f.get('change'), f.get('confirm_change')
    return (isinstance(a, (int, float)) and isinstance(b, (int, float)) and a * b > 0
            and abs(b) >= abs(a) / 2.0)


def past_unconfirmed(runs_dir, this_run=None):
    """The flags that earlier nights' confirmation re-runs did not reproduce, and (``.confirmed``)
    those they did (RUN/post/verdict.json; unreadable ones are passed over: they only sharpen
    `since`): a PastFlags. Of two sessions on one night, the later verdict on a series decides."""
    out = PastFlags(os.path.basename(os.path.normpath(this_run)) if this_run else None)
    try:
        names = sorted(os.listdir(runs_dir))
    except OSError:
        return out
    for name in names:
        path = os.path.join(runs_dir, name, 'post', 'verdict.json')
        try:
            with open(path, encoding='utf-8') as fh:
                doc = json.load(fh)
            for f in doc.get('findings', []):
                key = flag_key(f)
                night = str(f.get('night'))
                for among in (out, out.undecided, out.confirmed):
                    among.get(key, set()).discard(night)    # an earlier session's word on it
                into = (out if f.get('status') == 'unconfirmed' else
                        out.confirmed if f.get('confirmation') == 'confirmed' else None)
                if into is not None:
                    into.setdefault(key, set()).add(night)
                    if into is out:
                        out.origin[(key, night)] = name
                        if _half_again(f):
                            out.undecided.setdefault(key, set()).add(night)
        except (OSError, ValueError, AttributeError):
            continue
    return out


def _pct(x):
    return 'n/a' if x is None else f'{x:+.1%}'


def format_finding(f):
    since = f' since {f["since"]}' if f.get('since') else ''
    if is_many(f):
        fio = f'; fio {_pct(f["fio_change"])}' if f.get('fio_change') is not None else ''
        z = '' if f['z'] is None else f', z {f["z"]:+.1f}'
        subject = (group_label(f) if f['scope'] == 'group' else
                   'all checks' if f['scope'] == 'system' else 'all iobench checks (stack)')
        what = (f'{subject} {_pct(f["change"])} vs history{since} ({f["n"]} series, '
                f'{f["history_nights"]} nights{z}){fio}')
        return (f'{f["status"].upper():22s} {f["night"]} {f["system"]}:{f["partition"]} '
                f'{f["phase"]}: {what}')
    scale, unit = value_unit(f['params'])
    unit = f' {unit}' if scale != 1.0 else ''      # empty files: operations/s (common/units.py)
    if f['history_median'] is None or f['change'] is None or f.get('expected_median') is None:
        versus = f'(n={f["n"]}; {f["history_nights"]} earlier nights)'
    else:
        versus = (f'vs expected {f["expected_median"] * scale:.4g}{unit} ({_pct(f["change"])}'
                  f'{since}, z {f["z"]:+.1f}, n={f["n"]}; history median '
                  f'{f["history_median"] * scale:.4g} over {f["history_nights"]} nights)')
    outl = f' outliers={f["outliers"]}' if f['outliers'] else ''
    return (f'{f["status"].upper():22s} {f["night"]} {f["system"]}:{f["partition"]}+{f["environ"]} '
            f'{f["check"]} [{f["params"]}] {f["phase"]}: median {f["median"] * scale:.4g}{unit} '
            f'{versus}{outl}')


def latest_per_series(findings):
    latest = {}
    for f in findings:
        latest[(f['system'], f['partition'], f['environ'], f['check'], f['params'],
                f['phase'])] = f
    return sorted(latest.values(), key=lambda f: (f['scope'] == 'series', f['check'],
                                                  f['params'], f['phase']))


def run(args):
    from postprocess.detect.suite import detect
    if args.window < 1:
        from postprocess.common.errors import UsageError
        raise UsageError(f"--window must be >= 1, got '{args.window}'")
    # tonight's verdict needs each system's last `horizon` nights only (detect/suite.py), so only
    # those are read out of the cache: years of history cost what two months do
    history = inputs.load_history(args, last_nights=None if args.all_nights
                                  else DEFAULTS['horizon'])
    # accepted changes: those series re-baselined from their accepted night (postprocess/accept/)
    from postprocess.accept import apply as accepted
    acceptances = accepted.for_args(args)
    history = accepted.rebaseline(history, acceptances)
    findings = detect(history, value=args.value, window=args.window,
                      latest_only=not args.all_nights,
                      unconfirmed=past_unconfirmed(args.runs, args.this_run) if args.runs else None)
    if args.value == 'efficiency' and not findings:
        print('warning: no efficiency values: no fio baseline runs (backend=fio) in these '
              'sessions', file=sys.stderr)
    accepted.mark(findings, acceptances)
    shown = findings if args.all_nights else latest_per_series(findings)
    # what changed since the last good night, per flagged finding (postprocess/why/)
    from postprocess.why import annotate, state
    annotate.add_why_from_args(shown, args, history)
    state.add_state(shown, history)            # machine state per finding's night (history table)
    for f in shown:
        print(format_finding(f))
        if f.get('why'):
            print(f'    {f["why"]["line"]}')
    if args.json:
        atomic.write_text(args.json, json.dumps(findings, indent=1, default=str) + '\n')
    regressions = sum(f['status'] == 'regression' for f in shown)
    print(f'{len(shown)} findings, {regressions} regression(s)', file=sys.stderr)
    return 1 if regressions else 0
