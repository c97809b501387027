"""Find iobench's result document beside a Darshan log (what the index, diff and triage join on)."""
import json
import os
import re

RESULT_SCHEMA = 'iobench-result/1'


def load_json(path):
    try:
        with open(path, encoding='utf-8') as fp:
            return json.load(fp)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def further_process(log):
    """'pN' for iobench.pN.darshan, the log of process N >= 1 of a check of several processes
    (reframe_checks/iobench_lib/processes.py: log_name); None for any other log."""
    m = re.search(r'\.(p\d+)\.darshan$', os.path.basename(log))
    return m.group(1) if m else None


def result_beside(log):
    """iobench's result document for a log: <stem>.json, else result.json (ReFrame's stage and
    output directories; result.pN.json for iobench.pN.darshan), else the only iobench result in
    the log's directory; or None."""
    d = os.path.dirname(log) or '.'
    stem = os.path.basename(log)[:-len('.darshan')] if log.endswith('.darshan') else None
    proc = further_process(log)
    names = ([stem + '.json'] if stem else []) + [f'result.{proc}.json' if proc else 'result.json']
    for name in names:
        doc = load_json(os.path.join(d, name)) if os.path.isfile(os.path.join(d, name)) else None
        if isinstance(doc, dict) and doc.get('schema') == RESULT_SCHEMA:
            return doc
    found = []
    for name in sorted(f for f in os.listdir(d) if f.endswith('.json')):
        doc = load_json(os.path.join(d, name))
        if isinstance(doc, dict) and doc.get('schema') == RESULT_SCHEMA:
            found.append(doc)
    return found[0] if len(found) == 1 else None
