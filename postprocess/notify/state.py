"""What was last said about a system: ``<results>/notify/<system>.json``, so a night is told at most
once and the all-clear is sent once, after a red night was told.

    {"state": "red" | "green", "night": "YYYY-MM-DD", "run": "<run dir name>", "sent": "<UTC time>"}
"""
import json
import os

from postprocess.common import atomic


def state_path(results_root, system):
    return os.path.join(results_root, 'notify', f'{system}.json')


def load(path):
    """The last state told (None: never told, or an unreadable file, which is then rewritten)."""
    try:
        with open(path, encoding='utf-8') as fp:
            doc = json.load(fp)
        return doc if isinstance(doc, dict) and doc.get('state') in ('red', 'green') else None
    except (OSError, ValueError):
        return None


def save(path, doc):
    atomic.write_text(path, json.dumps(doc, indent=1) + '\n')


def decide(tonight, night, last):
    """'red', 'green' (the all-clear) or None (nothing to say). ``tonight``: 'red' or 'green'.
    At most one message per night and system: a night already told stays told, whatever a later run
    of the same night says."""
    if last and last.get('night') == night:
        return None
    if tonight == 'red':
        return 'red'
    if last and last.get('state') == 'red':
        return 'green'
    return None
