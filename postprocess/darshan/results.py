"""Find iobench's result document beside a Darshan log (what the index, diff and triage join on)."""
import json
import os

from contract.process_files import further_process, json_of_log  # noqa: F401 (the index's)

RESULT_SCHEMA = 'iobench-result/1'


def load_json(path):
    try:
        with open(path, encoding='utf-8') as fp:
            return json.load(fp)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def result_beside(log):
    """iobench's result document for a log: <stem>.json, else result.json (ReFrame's stage and
    output directories; result.pN.json for iobench.pN.darshan), else the only iobench result in
    the log's directory; or None."""
    d = os.path.dirname(log) or '.'
    stem = os.path.basename(log)[:-len('.darshan')] if log.endswith('.darshan') else None
    names = ([stem + '.json'] if stem else []) + [json_of_log(log)]
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
