"""Errors every command reports as one line (postprocess/cli.py turns them into exit statuses)."""


class UsageError(Exception):
    """Bad input detected by a command after argument parsing: reported as one line, exit 2."""
