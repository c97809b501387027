"""Reading the JSON documents commands take as input (findings, verdicts, ReFrame reports)."""
import json

from postprocess.common.errors import UsageError


def read_json(path, what):
    """The JSON document at ``path``; bad input is one line naming the file (UsageError)."""
    try:
        with open(path, encoding='utf-8') as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise UsageError(f"no such {what} '{path}'") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"cannot read {what} '{path}': {err}") from None
