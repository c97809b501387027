"""``python -m gate``: is stack B slower than stack A? Both run side by side now, judged on pairs.

    python -m gate --a ENV --b ENV [--system S] [--name REGEX]... [--tag TAG]...
        [--pairs N|auto] [--effect F] [--max-pairs N] [--plan [--pilot N]] [--tolerance F]
        [--level F] [--bisect [--max-parts N]] [--out DIR] [-- REFRAME_ARGS...]

Unlike ``postprocess compare`` (sessions against nights of history), nothing from the history is needed:
the checks run under A and B interleaved in this session (runs.py), each check and phase is
judged on its B/A pair ratios (pairs.py), and with --bisect the parts that differ are tried one
at a time (bisect.py). Writes <out>/gate.json and <out>/index.html, prints the summary.
Exit status: 0 every check and phase same or faster; 3 one is slower; 4 one cannot be told
(too few pairs, too much spread, not run on one side); 1 a check failed or a run could not be
made; 2 bad usage. Never 0 when something could not be judged.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import sys

from gate import plan, sequential
import ioregress_env
from postprocess.common import atomic
from postprocess.common.command import OneLineParser, execute
from postprocess.common.errors import UsageError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    """Run the gate under the suite's one error path (postprocess/common/command.py)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return execute(run, args, f'{parser.prog}: error:')


def build_parser():
    p = OneLineParser(prog='python -m gate', description='run checks under stacks A and B side '
                      'by side and judge B on pairs (exit 3 slower, 4 cannot tell)')
    p.add_argument('--a', required=True, metavar='ENV', help='ReFrame environment of stack A '
                   '(the one trusted, e.g. before the upgrade)')
    p.add_argument('--b', required=True, metavar='ENV', help='ReFrame environment of stack B')
    p.add_argument('--system', help='ReFrame system[:partition] (default: picked by hostname)')
    p.add_argument('--name', action='append', default=[], metavar='REGEX',
                   help='checks to run (ReFrame -n, repeatable)')
    p.add_argument('--tag', action='append', default=[], help='ReFrame -t (default quick when '
                                                              'no --name or --tag is given)')
    p.add_argument('--checks', action='append', metavar='PATH',
                   help='ReFrame -c (default: the repository\'s reframe_checks)')
    p.add_argument('--config', help='ReFrame configuration (default: $IOREGRESS_CONFIG or '
                                    'configs/settings.py)')
    p.add_argument('--pairs', type=_pairs, default=8, help='pairs per stack (default 8), or '
                   'auto: blocks until every check is decided at --effect, or --max-pairs')
    p.add_argument('--effect', type=_effect, default=sequential.EFFECT,
                   help='the change to tell, as 0.15 or 15%% (default 15%%): the plan\'s target, '
                        'and "same" under --pairs auto = no change as large as this')
    p.add_argument('--max-pairs', type=_count, help='cap of --pairs auto (default: the plan\'s '
                   f'pairs of the hardest check, {plan.DEFAULT_CAP} when no spread is known)')
    p.add_argument('--plan', action='store_true', help='say how many pairs each check needs '
                   'and about how long, then stop (a pilot when no spread is known)')
    p.add_argument('--pilot', type=_count, default=6,
                   help='pairs of the pilot of --plan (default 6)')
    p.add_argument('--history', metavar='DIR', help='results directory with earlier gates '
                   '(gates/) and the results store (store/) (default <repo>/results)')
    p.add_argument('--tolerance', type=_fraction, default=0.05,
                   help='same = the whole interval within 1 +- this (default 0.05)')
    p.add_argument('--level', type=_fraction, default=0.90,
                   help='confidence of the intervals (default 0.90)')
    p.add_argument('--bisect', action='store_true',
                   help='when B is slower, name the part(s) of the stack that carry it')
    p.add_argument('--max-parts', type=_count, default=8,
                   help='refuse to bisect more parts than this (default 8)')
    p.add_argument('--out', help='output directory (default results/gates/<UTC time>)')
    p.add_argument('--reframe', default=os.environ.get('REFRAME', 'reframe'))
    p.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_ARGS',
                   help='passed to every ReFrame run (e.g. -S repeat=3)')
    return p


def _count(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more '{text}'")
    return value


def _pairs(text):
    return 'auto' if text == 'auto' else _count(text)


def _effect(text):
    try:
        value = float(text[:-1]) / 100 if text.endswith('%') else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or percentage '{text}'") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1 (0 % and 100 %) '{text}'")
    return value


def _fraction(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number '{text}'") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1 '{text}'")
    return value


def _out_dir(args):
    out = args.out or os.path.join(
        REPO, 'results', 'gates', f'{datetime.datetime.now(datetime.timezone.utc):%Y%m%dT%H%M%SZ}')
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise UsageError(f"--out exists and is not an empty directory '{out}'")
    os.makedirs(out, exist_ok=True)
    return os.path.abspath(out)


def run(args):
    from gate import bisect, judge, page, stacks, summary
    from gate.runs import GateError, Session
    if args.level <= 0.5:
        raise UsageError(f"--level must be above 0.5 '{args.level}'")
    if args.effect < args.tolerance:
        raise UsageError(f"--effect must be at least --tolerance ({args.tolerance:g}) "
                         f"'{args.effect:g}'")
    config = args.config or ioregress_env.get('IOREGRESS_CONFIG') or \
        os.path.join(REPO, 'configs', 'settings.py')
    if not os.path.isfile(config):
        raise UsageError(f"no ReFrame configuration file '{config}'")
    system = args.system or stacks.system_name(args.reframe, config)
    envs = stacks.resolve(args.reframe, config, system)
    a, b = stacks.stack(envs, args.a, '--a'), stacks.stack(envs, args.b, '--b')
    parts = bisect.parts_of(a, b, args.max_parts) if args.bisect else None
    select = [x for n in args.name for x in ('-n', n)] + [x for t in args.tag for x in ('-t', t)]
    select = select or ['-t', 'quick']
    spreads, seconds = plan.known(args.history or os.path.join(REPO, 'results'), system, select,
                                  args.name)
    out = _out_dir(args)
    checks = [os.path.abspath(c) for c in (args.checks or [os.path.join(REPO, 'reframe_checks')])]
    session = Session(out, config, system, checks, select, args.reframe_args, args.reframe)
    auto = args.pairs == 'auto'
    doc = {'schema': 'ioregress-gate/1', 'system': system, 'config': os.path.abspath(config),
           'a': {'name': args.a, 'environment': a}, 'b': {'name': args.b, 'environment': b},
           'pairs': args.pairs, 'tolerance': args.tolerance, 'level': args.level,
           'effect': args.effect, 'rule': 'sequential' if auto else 'fixed',
           'select': select, 'reframe_args': args.reframe_args,
           'command': ' '.join(map(shlex.quote, ['python3', '-m', 'gate'] + sys.argv[1:])),
           'host': platform.node(), 'started': _now()}
    effect = args.effect if auto else None
    try:
        session.add([args.a, args.b])
        if not session.selected(args.a):
            shutil.rmtree(out)          # bad usage leaves nothing behind
            raise UsageError(f"{' '.join(select)} under '{args.a}' selects no check (reframe -l "
                             f"with the same options lists what there is)")
        doc['plan'] = plan.rows(spreads, args.tolerance, args.effect, args.level)
        if args.plan and not doc['plan']:
            doc['plan'] = _pilot(session, args, a, b, judge, doc)
            seconds = _slot_seconds(session.slots)
        doc['max_pairs'] = plan.cap(doc['plan'], args.max_pairs) if auto else None
        doc['plan_seconds'] = seconds
        for line in plan.lines(doc['plan'], args.tolerance, args.effect, args.level, seconds):
            print(line, flush=True)
        if args.plan:
            return _finish(doc, out, session, judge, summary, page, plan_only=True)
        session.warm(args.a, (a.get('extras') or {}).get('gate_setup', []))
        session.warm(args.b, (b.get('extras') or {}).get('gate_setup', []))
        until = (lambda got: judge.decided(judge.arm(got[0], got[1], args.tolerance,
                                                     args.level, effect=effect))) if auto else None
        got = session.blocks([args.a, args.b], doc['max_pairs'] if auto else args.pairs,
                             until=until)
        doc['results'] = judge.arm(got[0], got[1], args.tolerance, args.level, effect=effect)
        doc['pairs_run'] = len(got[0])
        slower = {(r['check'], r['phase']) for r in doc['results'] if r['status'] == 'slower'}
        if args.bisect and slower:
            hashes = {c: f['hash'] for rec in session.slots for c, f in rec['checks'].items()}
            cfg = argparse.Namespace(**vars(args), cap=doc['max_pairs'], sequential=auto)
            doc['bisect'] = bisect.run(session, (args.a, args.b), a, b, doc['results'], hashes,
                                       cfg, parts)
            doc['bisect']['shares'] = bisect.shares(doc['bisect'], doc['results'])
        elif args.bisect:
            doc['bisect'] = {'note': 'nothing slower: no bisection', 'stages': [], 'named': [],
                             'parts': [p.to_json() for p in parts]}
    except GateError as err:
        doc.update(results=doc.get('results', []), error=str(err))
        print(f'python -m gate: error: {" ".join(str(err).split())}',
              file=sys.stderr)
    return _finish(doc, out, session, judge, summary, page)


def _pilot(session, args, a, b, judge, doc):
    """Plan rows from ``--pilot`` pairs of A and B run now."""
    session.warm(args.a, (a.get('extras') or {}).get('gate_setup', []))
    session.warm(args.b, (b.get('extras') or {}).get('gate_setup', []))
    got = session.blocks([args.a, args.b], args.pilot, what='pilot')
    results = judge.arm(got[0], got[1], args.tolerance, args.level)
    doc['pilot'] = results
    return plan.rows(plan.from_pilot(results), args.tolerance, args.effect, args.level)


def _slot_seconds(slots):
    secs = [s['seconds'] for s in slots if s['label'] != 'warm-up']
    return sorted(secs)[len(secs) // 2] if secs else None


def exit_status(doc, judge, plan_only=False):
    """A plan judges nothing: 0 when every check has one, else 4. A gate: 1 on an error, else
    the worst of its verdicts, and 4 rather than 3 when its bisection could not tell (it names
    no guess)."""
    if plan_only:
        return 0 if doc['plan'] else 4
    if doc.get('error'):
        return 1
    code = judge.exit_status(doc['results'])
    return 4 if code == 3 and (doc.get('bisect') or {}).get('cannot_tell') else code


def _finish(doc, out, session, judge, summary, page, plan_only=False):
    doc['slots'] = session.slots
    doc['finished'] = _now()
    doc.setdefault('results', [])
    doc['exit'] = exit_status(doc, judge, plan_only)
    doc['verdict'] = 'PLAN' if plan_only else summary.VERDICT[doc['exit']]
    atomic.write_text(os.path.join(out, 'plan.json' if plan_only else 'gate.json'),
                      json.dumps(doc, indent=1, default=str) + '\n')
    if plan_only:
        return doc['exit']
    page.write(os.path.join(out, 'index.html'), doc)
    for line in summary.lines(doc):
        print(line)
    print(f'page: {os.path.join(out, "index.html")}')
    return doc['exit']


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')
