"""``report``: the verdict-first HTML page of a run and its figures; ``summary``: the terminal's."""
import os
import sys

from postprocess.history.cli import add_history_args, print_warnings, query_of
from postprocess.report import summary


def register(subparsers):
    p = subparsers.add_parser('report', help='HTML page (verdict first, every series by check, '
                                             'interactive history) and PNG figures')
    add_history_args(p)
    p.add_argument('-o', '--output', required=True, metavar='DIR', help='output directory')
    p.add_argument('--value', choices=['bw_MiBps', 'efficiency'], default='bw_MiBps',
                   help='what the detector judges for the flags in history plots')
    p.add_argument('--run', metavar='RUN_DIR',
                   help="this run's directory: its report.json (pass/fail/skip), post/detect.json "
                        "(findings), post/verdict.json (tonight's confirmed flags) and "
                        'post/darshan/index.json (links) are used when present '
                        '(default: the run holding DIR when DIR is RUN_DIR/post/<name>)')
    p.add_argument('--findings', metavar='FILE',
                   help='detect findings JSON to show (default: RUN_DIR/post/detect.json, else '
                        'detection is run here)')
    p.add_argument('--darshan-index', metavar='HTML',
                   help='Darshan index page to link (default: DIR/darshan/index.html or '
                        'RUN_DIR/post/darshan/index.html if present)')
    p.add_argument('--darshan-json', metavar='FILE',
                   help='Darshan index rows to link per series (default: index.json beside the '
                        'Darshan index page)')
    p.add_argument('--max-history-plots', type=int, default=40, metavar='N',
                   help='at most N history figures, flagged series first (default 40)')
    p.add_argument('--history-nights', type=int, default=120, metavar='N',
                   help='history figures show the last N nights (default 120)')
    p.set_defaults(func=run)
    summary.register(subparsers)


def _first_existing(*paths):
    return next((p for p in paths if p and os.path.exists(p)), None)


def _enclosing_run(output):
    """RUN_DIR when the output is RUN_DIR/post/<name> beside RUN_DIR/report.json (the layout of
    ci/nightly.sh and ci/quick.sh), so their report shows the run without being told."""
    post = os.path.dirname(os.path.abspath(output))
    run_dir = os.path.dirname(post)
    if os.path.basename(post) == 'post' and os.path.exists(os.path.join(run_dir, 'report.json')):
        return run_dir
    return None


def run(args):
    from postprocess.report import build
    from postprocess.common.errors import UsageError
    if args.history_nights < 1:
        raise UsageError(f"--history-nights must be >= 1, got '{args.history_nights}'")
    if args.max_history_plots < 0:
        raise UsageError(f"--max-history-plots must be >= 0, got '{args.max_history_plots}'")
    if args.run and not os.path.isdir(args.run):
        raise UsageError(f"no such run directory '{args.run}'")
    run_dir = args.run or _enclosing_run(args.output)
    post = os.path.join(run_dir, 'post') if run_dir else None
    args.findings = args.findings or (_first_existing(os.path.join(post, 'detect.json'))
                                      if post else None)
    args.verdict = _first_existing(os.path.join(post, 'verdict.json')) if post else None
    args.reframe_report = _first_existing(os.path.join(run_dir, 'report.json')) if run_dir else None
    args.reframe_out = os.path.join(run_dir, 'reframe.out') if run_dir else None
    # steps of ci/nightly.sh that failed before this one (name<TAB>reason per line): on the page
    args.failed_steps = _first_existing(os.path.join(post, 'failed-steps.tsv')) if post else None
    args.darshan_index = args.darshan_index or _first_existing(
        os.path.join(args.output, 'darshan', 'index.html'),
        os.path.join(post, 'darshan', 'index.html') if post else None)
    if args.darshan_index and not os.path.exists(args.darshan_index):
        args.darshan_index = None     # nothing to link (a failed index step must not break links)
    args.darshan_json = args.darshan_json or _first_existing(
        os.path.join(os.path.dirname(args.darshan_index), 'index.json') if args.darshan_index
        else None, os.path.join(post, 'darshan', 'index.json') if post else None)
    page, nfigs, notes, warnings = build.build_report(args, query_of(args))
    for note in notes:
        print(f'note: {note}', file=sys.stderr)
    print(f'{nfigs} figures, report: {page}')
    print_warnings(warnings)
    return 0
