"""Thin command line over the postprocess library: ``python -m postprocess <command> ...``.

Subcommands are registered in ``SUBCOMMANDS``: each entry names a module and a function
``register(subparsers)`` in it that adds its parser and sets ``func=<callable(args) -> int>``.
To add a command, append one line here and keep heavy imports inside the callable so that
``--help`` and the other commands stay fast.
"""
import argparse
import importlib
import os
import signal
import sys

from postprocess.common.errors import InputFault, UsageError, describe_os_error

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
    'postprocess.gate.cli:register',        # gate
    'postprocess.cost.cli:register',        # cost
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
    """Run one command. The one error path: bad usage -> one line, exit 2; an environment fault
    (OSError, damaged input) -> one line naming the path and the reason, exit 1; any other
    exception -> one line, exit 1 (IOREGRESS_DEBUG=1 re-raises it with its traceback)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, 'func', None):
        parser.error('a command is required (see --help)')
    prefix = f'{parser.prog} {args.command}: error:'
    # SIGTERM (a nightly stopped, a CI job cancelled) unwinds like Ctrl-C: temporary files of
    # atomic outputs are removed and the previous outputs stay whole.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return args.func(args) or 0
    except UsageError as err:
        return _fail(prefix, err, 2)
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 143
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error worth a message.
        sys.stderr.close()
        return 1
    except OSError as err:
        return _fail(prefix, describe_os_error(err), 1)
    except InputFault as err:
        return _fail(prefix, err, 1)
    except MemoryError:
        return _fail(prefix, 'out of memory', 1)
    except Exception as err:        # noqa: BLE001 -- never a traceback at 3 a.m.
        if os.environ.get('IOREGRESS_DEBUG'):
            raise
        return _fail(prefix, f'internal error {type(err).__name__}: {err} '
                             f'(IOREGRESS_DEBUG=1 shows the traceback)', 1)


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM."""


def _terminate(signum, frame):
    raise Terminated()


def _fail(prefix, message, status):
    text = ' '.join(str(message).split())      # one line whatever the message holds
    sys.stderr.write(f'{prefix} {text}\n')
    return status
