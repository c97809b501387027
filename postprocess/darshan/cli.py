"""Darshan subcommands of ``python -m postprocess``: darshan-index, darshan-diff, darshan-check.

Registered through postprocess/cli.py's SUBCOMMANDS; heavy imports (PyDarshan, pandas) happen
inside the commands so ``--help`` stays fast.
"""
import json
import os
import sys


def _usage_error(msg):
    from postprocess.common.errors import UsageError
    return UsageError(msg)


def _index(args):
    from postprocess.darshan import index as darshan_index
    if not os.path.isdir(args.results_dir):
        raise _usage_error(f"results directory does not exist: '{args.results_dir}'")
    if args.jobs is not None and args.jobs < 1:
        raise _usage_error(f"--jobs must be at least 1: '{args.jobs}'")
    rows, secs = darshan_index.build_index(
        args.results_dir, args.output, jobs=args.jobs, summaries=args.summaries,
        progress=None if args.quiet else (lambda m: print(f'darshan-index: {m}', file=sys.stderr)))
    counts = {}
    for r in rows:
        counts[r['verdict']] = counts.get(r['verdict'], 0) + 1
    critical = sum(1 for r in rows if r['insight_counts']['critical'])
    if not rows:
        why = '; '.join(f'{w} ({n})' for w, n in darshan_index.capture_reasons(args.results_dir))
        print(f'{os.path.join(args.output, "index.html")}: no Darshan log under '
              f'{args.results_dir}: {why or "no run report says why"} (docs/darshan-capture.md '
              f'says how to turn capture on)')
        return 0
    print(f'{os.path.join(args.output, "index.html")}: {len(rows)} logs '
          f'({", ".join(f"{k} {v}" for k, v in sorted(counts.items()))}; '
          f'{critical} with unexpected critical Drishti issues) in {secs:.1f} s')
    return 0


def _open_or_usage(log):
    from contract import darshan_facts
    if not os.path.isfile(log):
        raise _usage_error(f"no such Darshan log: '{log}'")
    try:
        return darshan_facts.open_log(log)
    except darshan_facts.DarshanLogError as err:
        raise _usage_error(str(err)) from None


def _diff(args):
    from contract import darshan_facts
    from postprocess.darshan import triage as darshan_triage
    from postprocess.darshan.results import result_beside
    facts = []
    for log in (args.log_a, args.log_b):
        report = _open_or_usage(log)
        res = result_beside(log)
        facts.append(darshan_facts.log_facts(report, darshan_facts.files_from_result(res) if res else None))
    changes = darshan_triage.diff_facts(*facts)
    print(darshan_triage.render_text(changes, args.log_a, args.log_b, top=args.top))
    if args.output:
        from postprocess.common.atomic import write_text
        write_text(args.output, darshan_triage.render_html(changes, args.log_a, args.log_b))
        print(f'HTML: {args.output}')
    return 0


def _check(args):
    from contract import darshan_checks, darshan_facts
    report = _open_or_usage(args.log)
    try:
        with open(args.result, encoding='utf-8') as fp:
            result = json.load(fp)
    except (OSError, ValueError) as err:
        raise _usage_error(f"cannot read iobench result '{args.result}': {err}") from None
    facts = darshan_facts.log_facts(report, darshan_facts.files_from_result(result))
    verdicts = darshan_checks.check_run(facts, result)
    print(darshan_checks.format_verdicts(verdicts))
    fig = darshan_checks.perf_figures(facts)
    print(f'darshan: slowest-rank I/O time {fig["darshan_io_time"]} s, aggregate {fig["darshan_bw"]} MiB/s')
    return 1 if darshan_checks.failures(verdicts) else 0


def register(subparsers):
    p = subparsers.add_parser('darshan-index', help='static HTML index of the Darshan logs under a results tree')
    p.add_argument('results_dir', metavar='RESULTS_DIR')
    p.add_argument('-o', '--output', required=True, metavar='OUT_DIR', help='site directory (cache kept here)')
    p.add_argument('-j', '--jobs', type=int, default=None, help='parallel workers (default: CPU count)')
    p.add_argument('--summaries', choices=('flagged', 'all', 'none'), default='flagged',
                   help='PyDarshan summary reports (seconds of CPU each) for the failed and flagged runs '
                        '(default), for every log (most wanted first, the index is usable before they '
                        'are done) or none; summaries made earlier are kept and linked')
    p.add_argument('--no-summaries', dest='summaries', action='store_const', const='none',
                   help='same as --summaries none')
    p.add_argument('-q', '--quiet', action='store_true')
    p.set_defaults(func=_index)

    p = subparsers.add_parser('darshan-diff', help='Darshan counters that changed most between two runs')
    p.add_argument('log_a', metavar='LOG_A')
    p.add_argument('log_b', metavar='LOG_B')
    p.add_argument('-o', '--output', metavar='DIFF_HTML', help='also write the diff as HTML')
    p.add_argument('--top', type=int, default=40, help='changes shown in the text output (default 40)')
    p.set_defaults(func=_diff)

    p = subparsers.add_parser('darshan-check', help="assert a Darshan log against iobench's result JSON")
    p.add_argument('log', metavar='LOG')
    p.add_argument('result', metavar='RESULT_JSON')
    p.set_defaults(func=_check)
