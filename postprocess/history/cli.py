"""``ingest``: the tidy repetition table as CSV or JSON lines."""
import csv
import json
import sys

from postprocess.common import atomic
from postprocess.history import inputs

COLUMNS = ['system', 'partition', 'environ', 'check', 'params', 'time', 'night', 'session', 'phase',
           'rep', 'bytes', 'seconds', 'bw_MiBps', 'efficiency', 'result']


def register(subparsers):
    p = subparsers.add_parser('ingest', help='perflogs/results DB -> one tidy table (one row per '
                                             'repetition and phase)')
    inputs.add_history_args(p)
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
    history = inputs.load_history(args)
    text = render(history.rows(), args.format)
    if args.output:
        atomic.write_text(args.output, text)
        print(f'{len(history)} rows from {len(history.runs)} runs -> {args.output}', file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
