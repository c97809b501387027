"""Thin command line over the postprocess library: ``python -m postprocess <command> ...``.

Subcommands are registered in ``SUBCOMMANDS``: each entry names a module and a function
``register(subparsers)`` in it that adds its parser and sets ``func=<callable(args) -> int>``.
To add a command, append one line here and keep heavy imports inside the callable so that
``--help`` and the other commands stay fast.
"""
import importlib

from postprocess.common.command import OneLineParser, execute

SUBCOMMANDS = [
    'postprocess.history.cli:register',     # ingest
    'postprocess.history.store_cli:register',   # import, store-run
    'postprocess.detect.cli:register',      # detect
    'postprocess.references.cli:register',  # calibrate
    'postprocess.report.cli:register',      # report, summary
    'postprocess.darshan.cli:register',     # darshan-index, darshan-diff, darshan-check
    'postprocess.export.cli:register',      # export-findings
    'postprocess.notify.cli:register',      # notify
    'postprocess.accept.cli:register',      # accept (--list, --undo)
    'postprocess.compare.cli:register',     # compare
    'postprocess.cost.cli:register',        # cost
]


def build_parser():
    parser = OneLineParser(prog='python -m postprocess',
                           description='ioregress history, detection, calibration and plots')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    for entry in SUBCOMMANDS:
        modname, funcname = entry.split(':')
        getattr(importlib.import_module(modname), funcname)(subparsers)
    return parser


def main(argv=None):
    """Run one command under the suite's one error path (common/command.py)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, 'func', None):
        parser.error('a command is required (see --help)')
    return execute(args.func, args, f'{parser.prog} {args.command}: error:')
