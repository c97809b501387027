"""Errors every command reports as one line (common/command.py turns them into exit statuses).

Exit status 2: ``UsageError`` (bad arguments or bad input: a name, a file that is not a perflog or
not a results DB). Exit status 1: an environment fault (``OSError``: missing, unwritable, full or
read-only paths; ``InputFault`` for a damaged input the user did not get wrong).
"""


class UsageError(Exception):
    """Bad input detected by a command after argument parsing: reported as one line, exit 2."""


class InputFault(Exception):
    """An input that was fine and is now damaged (e.g. a results DB that fails its integrity
    check): one line, exit 1."""


def describe_os_error(err):
    """``'<path>': <reason>`` for an OSError (both paths of a failed rename), else its text."""
    reason = err.strerror or str(err)
    if err.filename is None:
        return reason
    where = f"'{err.filename}'"
    if getattr(err, 'filename2', None):
        where += f" -> '{err.filename2}'"
    return f'{where}: {reason}'
