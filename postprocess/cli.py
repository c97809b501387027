"""Thin command line over the postprocess library: ``python -m postprocess <command> ...``.

Subcommands are registered in ``SUBCOMMANDS``: each entry names a module and a function
``register(subparsers)`` in it that adds its parser and sets ``func=<callable(args) -> int>``.
To add a command, append one line here and keep heavy imports inside the callable so that
``--help`` and the other commands stay fast.
"""
import argparse
import importlib
import sys

from postprocess.common.errors import UsageError

SUBCOMMANDS = [
    'postprocess.history.cli:register',     # ingest
    'postprocess.detect.cli:register',      # detect
    'postprocess.references.cli:register',  # calibrate
    'postprocess.report.cli:register',      # plots, report
    'postprocess.darshan.cli:register',     # darshan-index, darshan-diff, darshan-check
]


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; the suite's rule is one line and exit status 2."""

    def error(self, message):
        sys.stderr.write(f'{self.prog}: error: {message}\n')
        sys.exit(2)


def build_parser():
    parser = OneLineParser(prog='python -m postprocess',
                           description='ioregress history, detection, calibration and plots')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    for entry in SUBCOMMANDS:
        modname, funcname = entry.split(':')
        getattr(importlib.import_module(modname), funcname)(subparsers)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, 'func', None):
        parser.error('a command is required (see --help)')
    try:
        return args.func(args) or 0
    except UsageError as err:
        sys.stderr.write(f'{parser.prog} {args.command}: error: {err}\n')
        return 2
    except KeyboardInterrupt:
        return 130
