"""``report``: the figures and one HTML page collecting them."""
import os
import sys

from postprocess.history import inputs


def register(subparsers):
    p = subparsers.add_parser('report', help='plots (PNG) and an HTML page: bandwidth vs ranks, '
                                             'stripe heatmaps, history per check, library bars')
    inputs.add_history_args(p)
    p.add_argument('-o', '--output', required=True, metavar='DIR', help='output directory')
    p.add_argument('--value', choices=['bw_MiBps', 'efficiency'], default='bw_MiBps',
                   help='what the detector judges for the flags in history plots')
    p.add_argument('--darshan-index', metavar='HTML',
                   help='Darshan index page to link (default: DIR/darshan/index.html if present)')
    p.add_argument('--max-history-plots', type=int, default=40, metavar='N',
                   help='at most N history figures, flagged series first (default 40)')
    p.add_argument('--history-nights', type=int, default=120, metavar='N',
                   help='history figures show the last N nights (default 120)')
    p.set_defaults(func=run)


def run(args):
    from postprocess.report import plots
    from postprocess.detect.series import detect
    import numpy as np

    from postprocess.history.perflog import PHASES
    from postprocess.report.html import write_report
    from postprocess.common.errors import UsageError
    if args.history_nights < 1:
        raise UsageError(f"--history-nights must be >= 1, got '{args.history_nights}'")
    if args.max_history_plots < 0:
        raise UsageError(f"--max-history-plots must be >= 0, got '{args.max_history_plots}'")
    history = inputs.load_history(args)
    outdir = args.output
    figdir = os.path.join(outdir, 'figures')
    os.makedirs(figdir, exist_ok=True)
    # Latest night of every series for the table and to put flagged series first; every night
    # only for the series that get a history figure (detection of 10^5 runs is the slow part).
    latest = detect(history, value=args.value, latest_only=True)
    chosen = plots.history_series(history, latest, args.max_history_plots)
    findings = detect(history, value=args.value, series=set(chosen),
                      last_nights=args.history_nights)
    notes = []
    sections = [
        ('Bandwidth vs ranks', plots.bandwidth_vs_ranks(history, figdir, notes)),
        ('Stripe count x stripe size', plots.stripe_heatmap(history, figdir, notes)),
        ('Library comparison (latest night)', plots.library_bars(history, figdir, notes)),
        ('History per check', plots.history(history, findings, figdir, notes, chosen,
                                            args.history_nights)),
    ]
    darshan = args.darshan_index or os.path.join(outdir, 'darshan', 'index.html')
    darshan = darshan if os.path.exists(darshan) else None
    efficiency = {history.keys[kid] + (PHASES[ph],): float(np.median(nights[-1][1]))
                  for (kid, ph), nights in history.groups('efficiency').items()}
    page = write_report(os.path.join(outdir, 'index.html'), sections, latest, notes, darshan,
                        efficiency=efficiency)
    for note in notes:
        print(f'note: {note}', file=sys.stderr)
    print(f'{sum(len(f) for _, f in sections)} figures, report: {page}')
    return 0
