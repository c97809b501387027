"""The file names of a check's further iobench processes (a check's ``processes`` > 1): what the
checks write (reframe_checks/iobench_lib/processes.py) and the Darshan index joins on
(postprocess/darshan/results.py), written once. Process 0 keeps the plain names; process N >= 1
writes ``result.pN.json`` and ``<stem>.pN.darshan`` (still ``*.darshan``, as the index and a site's
tools look for)."""
import os
import re

FIRST_JSON = 'result.json'
_FURTHER_LOG = re.compile(r'\.(p[1-9]\d*)\.darshan$')


def json_name(i):
    """Process ``i``'s result document."""
    return FIRST_JSON if i == 0 else f'result.p{i}.json'


def log_name(first, i):
    """Process ``i``'s Darshan log beside the first's: ``iobench.darshan`` -> ``iobench.pN.darshan``."""
    if i == 0:
        return first
    stem, dot, ext = first.rpartition('.')
    return f'{stem}.p{i}.{ext}' if dot else f'{first}.p{i}'


def further_process(log):
    """'pN' for a log of process N >= 1 (``log_name``); None for any other log."""
    m = _FURTHER_LOG.search(os.path.basename(log))
    return m.group(1) if m else None


def json_of_log(log):
    """The result document's name a log of ``log_name`` pairs with: result.pN.json or result.json."""
    proc = further_process(log)
    return json_name(int(proc[1:]) if proc else 0)
