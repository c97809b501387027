"""History's command line: the options every history command shares (``add_history_args``, read
into a HistoryQuery by ``query_of``), and ``ingest``: the tidy repetition table as CSV or JSON
lines."""
import argparse
import csv
import datetime
import json
import sys

import ioregress_env
from postprocess.common import atomic
from postprocess.history import inputs
from postprocess.history.query import HistoryQuery

COLUMNS = ['system', 'partition', 'environ', 'check', 'params', 'time', 'night', 'session', 'phase',
           'rep', 'bytes', 'seconds', 'bw_MiBps', 'efficiency', 'result']


def add_history_args(parser, system_required=False):
    parser.add_argument('--store', metavar='DIR', default=ioregress_env.get('IOREGRESS_STORE'),
                        help='results store: <results>/store (default: $IOREGRESS_STORE)')
    parser.add_argument('--perflogs', action='append', default=[], metavar='DIR',
                        help='perflog directory or file (repeatable); *.log and rotated *.log.h<N>')
    parser.add_argument('--db', metavar='FILE', help="ReFrame results DB (storage.enable, sqlite)")
    parser.add_argument('--system', required=system_required, help='only runs of this system')
    parser.add_argument('--from', dest='date_from', type=iso_date, metavar='YYYY-MM-DD')
    parser.add_argument('--to', dest='date_to', type=iso_date, metavar='YYYY-MM-DD')
    parser.add_argument('--this-run', metavar='RUN_DIR',
                        default=ioregress_env.get('IOREGRESS_THIS_RUN'),
                        help="the nightly run directory asking: its report.json's runs count "
                             'with the store although not in it yet (default: $IOREGRESS_THIS_RUN)')


def iso_date(text):
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): '{text}'") from None


def query_of(args):
    """The HistoryQuery of the options ``add_history_args`` added."""
    return HistoryQuery(perflogs=args.perflogs, db=args.db, store=args.store, system=args.system,
                        date_from=args.date_from, date_to=args.date_to, this_run=args.this_run)


def print_warnings(lines):
    """Warnings about the input, printed when the command has done its work."""
    for line in lines:
        print(line, file=sys.stderr)


def register(subparsers):
    p = subparsers.add_parser('ingest', help='perflogs/results DB -> one tidy table (one row per '
                                             'repetition and phase)')
    add_history_args(p)
    p.add_argument('--format', choices=['csv', 'jsonl'], default='csv')
    p.add_argument('-o', '--output', help='file to write (atomically); default stdout')
    p.set_defaults(func=run)


def render(rows, fmt):
    if fmt == 'jsonl':
        return ''.join(json.dumps(r, sort_keys=True) + '\n' for r in rows)
    import io
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator='\n')
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def run(args):
    history, warnings = inputs.load_history(query_of(args))
    text = render(history.rows(), args.format)
    if args.output:
        atomic.write_text(args.output, text)
        print(f'{len(history)} rows from {len(history.runs)} runs -> {args.output}', file=sys.stderr)
    else:
        sys.stdout.write(text)
    print_warnings(warnings)
    return 0
