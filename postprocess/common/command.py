"""The one error path of the suite's commands (``python -m postprocess``, ``python -m gate``):
bad usage -> one line, exit 2; an environment fault (OSError, damaged input) -> one line naming
the path and the reason, exit 1; any other exception -> one line, exit 1 (IOREGRESS_DEBUG=1
re-raises it with its traceback). Shared so both commands fail the same way at 3 a.m."""
import argparse
import signal
import sys

import ioregress_env
from postprocess.common.errors import InputFault, UsageError, describe_os_error


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; the suite's rule is one line and exit status 2."""

    def error(self, message):
        sys.stderr.write(f'{self.prog}: error: {message}\n')
        sys.exit(2)


def execute(func, args, prefix):
    """``func(args)`` under the error path; ``prefix`` starts every error line."""
    # SIGTERM (a nightly stopped, a CI job cancelled) unwinds like Ctrl-C: temporary files of
    # atomic outputs are removed and the previous outputs stay whole.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return func(args) or 0
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
        if ioregress_env.get('IOREGRESS_DEBUG'):
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
