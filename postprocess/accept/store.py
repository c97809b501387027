"""Acceptances: "this change is the new normal", kept in the results tree, append-only.

``<results>/accepted.jsonl`` (beside ``perflogs/``), one JSON record a line, never rewritten:

    {"schema": "ioregress-accept/1", "action": "accept", "id": "a3f9c2d1",
     "system": "local", "partition": null, "checks": ["hdf5"], "since": "2026-01-06",
     "reason": "HDF5 1.12.3 is the new stack", "by": "root", "at": "2026-11-23T22:10:00+00:00"}
    {"schema": "ioregress-accept/1", "action": "undo", "id": "a3f9c2d1", "reason": "...",
     "by": "root", "at": "..."}

An acceptance re-baselines the series it names (``checks``: regular expressions searched in
"<check> <iob_params>", as ReFrame's -n; none = every series of the system and partition) from
its ``since`` night: the verdict forgets their nights before it (accept/apply.py). The perflogs
are never touched, so an ``undo`` restores the old judgement exactly.
"""
import datetime
import fcntl
import getpass
import hashlib
import json
import os

from postprocess.common.errors import InputFault

SCHEMA = 'ioregress-accept/1'
FILE = 'accepted.jsonl'


def results_of(perflogs):
    """The results tree of a perflog path: the parent of its nearest ``perflogs`` directory
    (ci/nightly.sh's layout), else the path's parent."""
    path = os.path.abspath(perflogs)
    probe = path
    while probe != os.path.dirname(probe):
        if os.path.basename(probe) == 'perflogs':
            return os.path.dirname(probe)
        probe = os.path.dirname(probe)
    return os.path.dirname(path.rstrip(os.sep))


def path_of(results):
    return os.path.join(results, FILE)


def load(results):
    """Every record, oldest first ([] when there is none yet). A damaged line is an InputFault
    naming it: acceptances decide what is red, a guess is not good enough."""
    path = path_of(results)
    if not os.path.exists(path):
        return []
    out = []
    with open(path, encoding='utf-8') as fp:
        for lineno, line in enumerate(fp, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise InputFault(f"damaged acceptance record at {path}:{lineno}") from None
            if not isinstance(rec, dict) or rec.get('action') not in ('accept', 'undo'):
                raise InputFault(f"not an acceptance record at {path}:{lineno}")
            out.append(rec)
    return out


def active(records):
    """The acceptances not undone, oldest first."""
    undone = {r['id'] for r in records if r['action'] == 'undo'}
    return [r for r in records if r['action'] == 'accept' and r['id'] not in undone]


def _stamp():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


def _user():
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def append(results, record):
    """Append one record (under an exclusive lock, flushed to disk); returns it with id/by/at."""
    record = dict(record, schema=SCHEMA, by=_user(), at=_stamp())
    if 'id' not in record:
        body = json.dumps(record, sort_keys=True).encode()
        record['id'] = hashlib.sha1(body).hexdigest()[:8]
    line = json.dumps(record, sort_keys=True, ensure_ascii=False) + '\n'
    with open(path_of(results), 'a', encoding='utf-8') as fp:
        fcntl.flock(fp, fcntl.LOCK_EX)
        fp.write(line)
        fp.flush()
        os.fsync(fp.fileno())
    return record


def describe(rec):
    where = rec['system'] + (f':{rec["partition"]}' if rec.get('partition') else '')
    what = ' '.join(rec.get('checks') or []) or 'every series'
    return f'{rec["id"]}  {where} {what} since {rec["since"]}: {rec["reason"]} ' \
           f'({rec.get("by", "?")}, {rec.get("at", "?")})'
