"""What a run says, in the order a person wants it: what needs attention, then everything else.

Inputs (each optional, each read as written by its owner, never rewritten):
* detect findings (``python -m postprocess detect --json``): one dict per (key, phase, night) with
  system, partition, environ, check, params, phase, night, status, median, history_median,
  change; newer ones may add ``scope`` ('series' | 'system' | 'stack' | 'group'), ``since`` and
  the statuses ``degraded`` and ``noisy`` -- shown when present, the rest works without them;
* ReFrame's ``report.json``: pass / fail / skip per test case and the failure reason;
* the Darshan index's ``index.json``: rows with system, partition, environ, check, params,
  night/time, ``page`` and ``diff_prev`` (hrefs relative to that index).
"""
import os
import re

from postprocess.common.errors import UsageError
from postprocess.common.findings import NOT_RED, is_many
from postprocess.common.jsonfile import read_json
from postprocess.report.reach import group_reach, reach_line

KEY = ('system', 'partition', 'environ', 'check', 'params')
FLAGGED = ('regression', 'improvement', 'degraded', 'noisy')
# Attention order: what is red tonight first (many series at once before one), then what is not.
KIND_ORDER = {'stack': 0, 'system': 0, 'group': 1, 'regression': 2, 'failed': 3,
              'degraded': 4, 'noisy': 5}
_ANSI = re.compile(r'\x1b\[[0-9;]*m')
_SKIP_LINE = re.compile(r'^\[\s*SKIP\s*\]\s*\(\s*\d+/\d+\)\s*(?P<name>.+?)\s/[0-9a-f]{8}\s'
                        r'.*?\[(?P<why>.*)\]\s*$')


def load_findings(path):
    data = read_json(path, 'findings file')
    if not isinstance(data, list) or not all(isinstance(f, dict) and 'status' in f for f in data):
        raise UsageError(f"not a list of detect findings: '{path}'")
    return data


def load_verdict(path):
    """The verdict document of ci/nightly.sh (``postprocess verdict``, schema ioregress-verdict/1):
    tonight's flagged findings, already limited to what tonight ran and confirmed by a re-run."""
    doc = read_json(path, 'verdict file')
    if not isinstance(doc, dict) or not isinstance(doc.get('findings'), list):
        raise UsageError(f"not a verdict document (no findings list): '{path}'")
    return doc


def load_cases(path):
    """Test cases of ReFrame's report.json (every run of the session; a retried case counts once,
    as its last run). Fixtures (the build) are kept: a failed build is a failure to show."""
    report = read_json(path, 'ReFrame report')
    try:
        runs = report['runs']
        cases = {}
        for run in runs:
            for case in run['testcases']:
                cases[(case['system'], case['partition'], case['environ'],
                       case['display_name'])] = case
    except (KeyError, TypeError):
        raise UsageError(f"not a ReFrame report (no runs/testcases): '{path}'") from None
    return list(cases.values())


def skip_reasons(reframe_out):
    """{display name: reason} from ReFrame's console output (report.json does not keep it)."""
    reasons = {}
    try:
        with open(reframe_out, encoding='utf-8', errors='replace') as fh:
            for line in fh:
                match = _SKIP_LINE.match(_ANSI.sub('', line).strip())
                if match:
                    reasons[match.group('name')] = match.group('why')
    except OSError:
        pass
    return reasons


def load_darshan_rows(path):
    """Rows of the Darshan index.json, or [] when there is none (then nothing is linked)."""
    if not path or not os.path.exists(path):
        return []
    rows = read_json(path, 'Darshan index')
    if isinstance(rows, dict):
        rows = rows.get('rows', [])
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


class DarshanLinks:
    """The newest Darshan log page (and diff to the last good run) per key, as hrefs from
    ``from_dir`` (the report's directory)."""

    def __init__(self, rows, index_path, from_dir):
        self.by_key = {}
        base = os.path.dirname(os.path.abspath(index_path)) if index_path else ''
        for row in sorted(rows, key=lambda r: str(r.get('time') or r.get('night') or '')):
            links = {'critical': row.get('critical')}     # Drishti's count, when the index has it
            for field in ('page', 'diff_prev'):
                if row.get(field):
                    target = os.path.join(base, row[field])
                    links[field] = os.path.relpath(target, from_dir).replace(os.sep, '/')
            key = tuple(str(row.get(k, '')) for k in KEY[:4])
            self.by_key[key + (str(row.get('params', '')),)] = links
            self.by_key.setdefault(key, {}).update(links)   # a failed run: params may be unknown

    def get(self, key):
        return self.by_key.get(tuple(key)) or self.by_key.get(tuple(key[:4])) or {}


def finding_key(f):
    return tuple(str(f.get(k, '')) for k in KEY)


def latest_per_series(findings):
    """The newest finding of every (key, phase)."""
    latest = {}
    for f in findings:
        sk = finding_key(f) + (f.get('phase', ''),)
        if sk not in latest or str(f.get('night', '')) >= str(latest[sk].get('night', '')):
            latest[sk] = f
    return list(latest.values())


def _case_key(case):
    return (case['system'], case['partition'], case['environ'], case['display_name'])


def build(findings, cases=None, skipped_why=None, tonight=None):
    """The verdict: counts, the attention list (what makes the night red, one entry per line,
    ordered), the notes (degraded levels and noisy nights: shown, never red) and the rest.

    With ``cases`` (this run's report.json) only series this run measured count for tonight: a key
    the run did not run must not raise its old flag again. ``tonight``: the nightly's verdict
    document; when given, its findings are what needs attention (scoped and confirmed there).
    Series of a flagged group (its library or check family, same phase) are told by the group's
    line, not again one by one."""
    skipped_why = skipped_why or {}
    latest = latest_per_series(findings)
    series_scope = [f for f in latest if not is_many(f)]
    many_scope = [f for f in latest if is_many(f)]
    if cases is not None:
        ran = {_case_key(c) for c in cases if c.get('result') in ('pass', 'fail')}
        series_scope = [f for f in series_scope if finding_key(f)[:4] in ran]
    judged = series_scope
    if tonight is not None:     # the nightly's verdict decided what is flagged tonight
        flagged = latest_per_series(tonight['findings'])
        known = {finding_key(f) + (f.get('phase', ''),) for f in flagged}
        judged = [f for f in flagged if not is_many(f)]
        series_scope = judged + [f for f in series_scope
                                 if finding_key(f) + (f['phase'],) not in known]
        many_scope = [f for f in flagged if is_many(f)]
    attention, notes = [], []
    red_groups = [f for f in many_scope if f.get('scope') == 'group' and f['status'] == 'regression']
    red_systems = {(f['system'], f['partition'], f['phase']) for f in many_scope
                   if f.get('scope') == 'system' and f['status'] == 'regression'}
    for f in judged:
        if f['status'] == 'regression' and any(_in_group(f, g) for g in red_groups):
            continue
        if f['status'] == 'regression' and 'backend=fio' in str(f.get('params', '')) \
                and (f['system'], f['partition'], f['phase']) in red_systems:
            continue        # the system-wide line names fio's change already
        if f['status'] == 'regression':
            attention.append(dict(f, kind='regression', since=f.get('since') or f.get('night')))
        elif f['status'] in NOT_RED:
            notes.append(dict(f, kind=f['status'], since=f.get('since')))
    for f in many_scope:
        if f['status'] == 'regression':
            attention.append(dict(f, kind=f['scope'], since=f.get('since') or f.get('night')))
        elif f['status'] in NOT_RED:
            notes.append(dict(f, kind=f['status'], since=f.get('since')))
    counts = {'passed': 0, 'failed': 0, 'skipped': 0, 'other': 0, 'builds': 0}
    skipped = []
    for case in cases or []:
        result = case.get('result')
        # every case ReFrame ran counts, the build fixture too: the total is ReFrame's "Ran N"
        if result == 'pass':
            counts['passed'] += 1
            counts['builds'] += bool(case.get('fixture'))
        elif result in ('fail', 'abort'):
            counts['failed'] += 1
            attention.append({'kind': 'failed', 'system': case['system'],
                              'partition': case['partition'], 'environ': case['environ'],
                              'check': case['display_name'], 'params': case.get('iob_params') or '',
                              'phase': case.get('fail_phase') or '',
                              'reason': one_line(case.get('fail_reason') or result)})
        elif result == 'skip':
            counts['skipped'] += 1
            skipped.append({'check': case['display_name'],
                            'reason': skipped_why.get(case['display_name'], '')})
        else:
            counts['other'] += 1
    order = lambda a: (KIND_ORDER[a['kind']], a.get('change') or 0, a['check'],  # noqa: E731
                       a.get('params', ''), a.get('phase', ''))
    attention = merge_partitions(sorted(attention, key=order))
    notes = merge_partitions(sorted(notes, key=order))
    shown = {finding_key(a) + (a.get('phase', ''),) for a in attention + notes
             if a['kind'] != 'failed'}
    rest = [f for f in series_scope if finding_key(f) + (f['phase'],) not in shown]
    return {'counts': counts, 'attention': attention, 'notes': notes, 'rest': rest,
            'skipped': skipped, 'improvements': [f for f in rest if f['status'] == 'improvement'],
            'reach': reach_line(latest), 'reach_groups': group_reach(latest)}


COLLAPSE_DAYS = 7       # the same change on several partitions: starts this close are one


def merge_partitions(entries):
    """One entry for the same change on several partitions of a system (one check's phase, or one
    kind of group, `since` within a week of each other): a Lustre upgrade that hit every file system
    is one line, ``partitions`` naming them and ``sizes`` [(partition, change)] its size on each."""
    out, index = [], {}
    for a in entries:
        if a['kind'] == 'failed':
            out.append(a)
            continue
        key = (a['kind'], a.get('system'), a.get('environ'), a.get('check'), a.get('params'),
               a.get('phase'), a.get('status'))
        for b in index.get(key, []):
            if _near(a.get('since'), b.get('since')) and a.get('partition') not in b['partitions']:
                b['partitions'].append(a['partition'])
                b['sizes'].append((a.get('partition'), a.get('change')))
                b['since'] = min(b.get('since') or '', a.get('since') or '') or b.get('since')
                break
        else:
            a = dict(a, partitions=[a.get('partition')], sizes=[(a.get('partition'),
                                                                 a.get('change'))])
            index.setdefault(key, []).append(a)
            out.append(a)
    return out


def partition_sizes(a):
    """'scratch1 -85%, scratch2 -84%' for a change on several partitions, '' for one."""
    sizes = a.get('sizes') or []
    if len(sizes) < 2:
        return ''
    return ', '.join(p if c is None else f'{p} {c:+.0%}' for p, c in sorted(sizes, key=str))


def _near(a, b):
    """Are two nights ('YYYY-MM-DD', or both unknown) at most COLLAPSE_DAYS apart?"""
    if not a or not b:
        return a == b
    import datetime
    try:
        return abs((datetime.date.fromisoformat(a[:10]) -
                    datetime.date.fromisoformat(b[:10])).days) <= COLLAPSE_DAYS
    except ValueError:
        return a == b


def _in_group(f, g):
    """Is series finding ``f`` one of group finding ``g``'s checks (same partition and phase)?"""
    key, _, value = g['params'].partition('=')
    if (f['system'], f['partition'], f['phase']) != (g['system'], g['partition'], g['phase']):
        return False
    if key == 'check':
        return check_class(f['check']) == value
    return f'{key}={value}' in str(f.get('params', '')).split(',')


def one_line(text, limit=300):
    text = ' '.join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + '…'


def short_params(params, check=''):
    """'backend=mpiio,mode=collective,pattern=benchio,ranks=2,size=64,stripe=default' ->
    'mpiio/collective ranks=2 size=64' (defaults and the pattern implied by the check dropped)."""
    fields = dict(p.split('=', 1) for p in params.split(',') if '=' in p)
    head = '/'.join(fields.pop(k) for k in ('backend', 'mode') if k in fields)
    if fields.get('stripe') == 'default':
        fields.pop('stripe')
    if fields.get('pattern') == 'benchio' or fields.get('pattern', '').lower() in check.lower():
        fields.pop('pattern', None)
    return ' '.join([head] + [f'{k}={v}' for k, v in fields.items()]).strip() or params


def check_class(check):
    """'BenchIO %size=64 %io=posix:fpp' -> 'BenchIO' (what the report groups by)."""
    return check.split(' ', 1)[0] if check else '?'
