"""Static HTML index of every Darshan log under a results tree (``python -m postprocess darshan-index``).

One row per log: where and what ran (system, partition, environ, check, parameters, date),
iobench and Darshan bandwidth, ReFrame's result, the Darshan assertions' verdict
(contract/darshan_checks.py) and the counts of Drishti's critical issues and warnings
(insights.py); each row links the log's own page (``logs/<id>.html``: every insight with its
recommendations), PyDarshan's summary where one exists and the diff with the previous good run of the same check. ``index.json`` holds the same
rows for other pages to link (the report does). Context comes from what lies beside the log
(iobench's result.json) and from ReFrame run reports (``runs[].testcases[]``, matched by the
test's output or stage directory); a log without either still gets a row with its counters.

Cheap work is done for every log and cached in OUT_DIR by the log's sha256 (``cache/`` facts,
``insights/`` Drishti). PyDarshan's summaries cost seconds of CPU each, so they are made for what
a person will open first: ``flagged`` = failed Darshan checks and failed ReFrame runs; ``all``
adds the newest run of each check, then the rest, rewriting the index after each band so it is
usable early; ``none`` makes none. A summary made once is kept and linked whatever the mode.
A bad log (truncated, corrupt, non-MPI, no POSIX module, odd file name) is a message in its row,
never the end of the index.
"""
import hashlib
import json
import os
import time

from postprocess.common.atomic import write_text
from postprocess.darshan import insights as darshan_insights
from postprocess.darshan.results import (RESULT_SCHEMA, further_process, load_json as _load_json,  # noqa: F401
                                         result_beside)
from postprocess.darshan.work import compute_cached, make_summaries, sha256_file, write_if_changed

SUMMARY_MODES = ('flagged', 'all', 'none')


def find_logs(root, skip=None):
    skip = os.path.realpath(skip) if skip else None
    logs = []
    for dirpath, dirnames, filenames in os.walk(root):
        if skip and os.path.realpath(dirpath).startswith(skip + os.sep) or os.path.realpath(dirpath) == skip:
            dirnames[:] = []
            continue
        dirnames.sort()
        logs += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith('.darshan')]
    return logs


def run_report_cases(root):
    """{realpath of a test's output/stage dir: testcase entry} from ReFrame run reports under root."""
    cases = {}
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            if not (f.endswith('.json') and ('report' in f or os.path.basename(dirpath) == 'reports')):
                continue
            doc = _load_json(os.path.join(dirpath, f))
            if not isinstance(doc, dict) or 'runs' not in doc:
                continue
            for run in doc.get('runs') or ():
                for tc in run.get('testcases') or ():
                    for key in ('outputdir', 'stagedir'):
                        if tc.get(key):
                            old = cases.get(os.path.realpath(tc[key]))
                            if old is None or (tc.get('job_completion_time_unix') or 0) >= \
                                    (old.get('job_completion_time_unix') or 0):
                                cases[os.path.realpath(tc[key])] = tc
    return cases


def capture_reasons(root):
    """[(why no log, number of runs)] from the checks' provenance in the run reports under root
    (iob_provenance.darshan, reframe_checks/iobench_lib/darshan.py), most frequent first: what
    an empty index says instead of an empty table."""
    reasons = {}
    cases = {id(tc): tc for tc in run_report_cases(root).values()}     # keyed by output and stage
    for tc in cases.values():
        try:
            prov = json.loads(tc.get('iob_provenance') or '{}').get('darshan') or {}
        except (ValueError, AttributeError):
            continue
        why = prov.get('why') or (prov.get('capture') if prov.get('log') == 'no darshan log'
                                  else None)
        if why:
            reasons[why] = reasons.get(why, 0) + 1
    return sorted(reasons.items(), key=lambda kv: -kv[1])


def _context(log, root, cases, result):
    """What run a log belongs to: from the run report, else the ReFrame directory layout."""
    d = os.path.realpath(os.path.dirname(log))
    tc = cases.get(d) or {}
    rel = os.path.relpath(os.path.dirname(log), root).split(os.sep)
    # ReFrame keeps a test's files in {output,stage}/<system>/<partition>/<environ>/<test>/
    tops = [i for i, part in enumerate(rel) if part in ('output', 'stage') and len(rel) - i == 5]
    guess = rel[tops[-1] + 1:] if tops else ['', '', '', '/'.join(rel)]
    params = {k: result.get(k) for k in ('backend', 'mode', 'pattern', 'ranks')} if result else {}
    if result and result.get('local_size'):
        params['size'] = 'x'.join(str(x) for x in result['local_size'])
    return {
        'system': tc.get('system', guess[0]).split(':')[0] if tc.get('system') else guess[0],
        'partition': tc.get('partition', guess[1]), 'environ': tc.get('environ', guess[2]),
        'check': tc.get('display_name') or tc.get('name') or guess[3],
        'params': tc.get('iob_params') or ','.join(f'{k}={v}' for k, v in params.items() if v is not None),
        'reframe_result': tc.get('result', ''),
        'reframe_reason': tc.get('fail_reason') or '',
        'completion': tc.get('job_completion_time_unix'),
    }


def _median_bw(result, phase):
    try:
        return float(result['summary'][phase]['bw_MiBps']['median'])
    except (KeyError, TypeError, ValueError):
        return None




def _facts_job(log, files):
    """Worker: {'facts', 'error'} for one log (runs in a child process)."""
    from contract import darshan_facts
    try:
        report = darshan_facts.open_log(log)
        return {'facts': darshan_facts.log_facts(report, files), 'error': None}
    except darshan_facts.DarshanLogError as err:
        return {'facts': None, 'error': str(err)}
    except Exception as err:  # a log PyDarshan chokes on must not end the report
        return {'facts': None, 'error': f'PyDarshan could not read this log ({type(err).__name__}: {err})'}


def _cache_key(sha, files):
    return sha + '-' + hashlib.sha256(json.dumps(sorted(files or [])).encode()).hexdigest()[:12] \
        if files is not None else sha + '-all'


def _verdict(f, err, result):
    """(verdict, message, assertions): pass/fail of the Darshan assertions, n/a when nothing can be
    asserted."""
    from contract import darshan_checks
    if err:
        return 'error', err, []
    if f['kind'] != 'ok' and not f['kind'].startswith('Darshan ran out') and not (
            f['non_mpi'] and result and int(result.get('ranks') or 0) == 1):
        return 'n/a', f['kind'], []
    if not result:
        return 'n/a', 'no iobench result.json beside the log: nothing asserted', []
    verdicts = darshan_checks.check_run(f, result)
    bad = darshan_checks.failures(verdicts)
    return ('fail' if bad else 'pass'), '; '.join(f'{v["check"]}: {v["detail"]}' for v in bad) or (
        f['kind'] if f['kind'] != 'ok' else ''), verdicts


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def build_rows(root, out_dir, jobs=None, progress=None):
    """Everything the pages need, one dict per log; caches facts and insights in out_dir."""
    from contract import darshan_checks, darshan_facts
    jobs = jobs or os.cpu_count() or 1
    say = progress or (lambda msg: None)
    t0 = time.time()
    cases = run_report_cases(root)
    entries = []
    for log in find_logs(root, skip=out_dir):
        try:
            sha = sha256_file(log)
        except OSError as err:
            entries.append({'log': log, 'sha': None, 'error': f'cannot read log: {err.strerror}'})
            continue
        result = result_beside(log)
        files = darshan_facts.files_from_result(result) if result else None
        entries.append({'log': log, 'sha': sha, 'result': result, 'files': files,
                        'key': _cache_key(sha, files)})
    # the largest logs first: a pool ends with its longest job, and a log's time grows with its
    # size (MDEmptyFiles' 5,000-file logs take Drishti ~30 s, the others < 5 s)
    largest_first = sorted((e for e in entries if e.get('sha')), key=lambda e: -_size(e['log']))
    facts = compute_cached([(e['key'], e['log'], e['files']) for e in largest_first],
                           os.path.join(out_dir, 'cache'), jobs, _facts_job, valid=lambda d: 'error' in d,
                           crashed={'facts': None})
    say(f'facts for {len(entries)} logs ready ({time.time() - t0:.1f} s)')
    version = darshan_insights.drishti_version()
    # Drishti on the first process's log of a check only: the others ran the same workload, and
    # Drishti takes ~30 s on each of MDEmptyFiles' (5,000 files a log) where the rest take < 5 s
    readable = {e['sha']: e['log'] for e in largest_first if facts[e['key']].get('facts')
                and not further_process(e['log'])}
    found = compute_cached([(sha, log) for sha, log in readable.items()], os.path.join(out_dir, 'insights'),
                           jobs, darshan_insights.drishti_insights,
                           valid=lambda d: d.get('drishti') == version, crashed={'drishti': version})
    say(f'Drishti insights for {len(readable)} logs ready ({time.time() - t0:.1f} s)')
    rows = []
    for e in entries:
        result = e.get('result')
        doc = facts.get(e.get('key')) or {'facts': None, 'error': e.get('error')}
        f, err = doc.get('facts'), doc.get('error')
        row = {'log': e['log'], 'rel': os.path.relpath(e['log'], root), 'sha': e.get('sha')}
        row.update(_context(e['log'], root, cases, result))
        row['iobench_write'] = _median_bw(result, 'write') if result else None
        row['iobench_read'] = _median_bw(result, 'read') if result else None
        row['darshan_bw'] = darshan_checks.perf_figures(f)['darshan_bw'] if f else None
        start = f['start_time'] if f else None
        row['date'] = (result or {}).get('started') or (
            time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(start)) if start else '')
        row['verdict'], row['message'], row['checks'] = _verdict(f, err, result)
        ins = found.get(e.get('sha')) if f else None
        if f and further_process(e['log']):
            ins = {'issues': [], 'error': 'Drishti read the first process of this check '
                                          '(iobench.darshan): the others ran the same workload'}
        row['insights'] = darshan_insights.annotate(ins, result)
        row['insight_counts'] = darshan_insights.counts(row['insights'], (ins or {}).get('error'))
        row['facts_key'] = e.get('key') if f else None
        row['page'] = 'logs/{}-{}.html'.format((e.get('sha') or 'unreadable')[:16],
                                               hashlib.sha256(row['rel'].encode()).hexdigest()[:8])
        row['result'] = result
        row['diff'] = row['diff_prev'] = row['summary'] = None
        rows.append(row)
    return rows


def _good(row):
    return row['verdict'] == 'pass' and row.get('reframe_result') != 'fail'


def _groups(rows):
    groups = {}
    for row in rows:
        if row.get('facts_key') and row.get('params'):  # only runs whose identity is known
            key = (row['system'], row['partition'], row['environ'], row['check'], row['params'])
            groups.setdefault(key, []).append(row)
    for group in groups.values():
        group.sort(key=lambda r: (r['date'], r['log']))
    return groups


def link_previous(rows, out_dir):
    """Give each row a diff with the previous good run of the same check (same key, earlier date)."""
    from postprocess.darshan import triage as darshan_triage
    for group in _groups(rows).values():
        last_good = None
        for cur in group:
            prev = last_good
            if _good(cur):
                last_good = cur
            if prev is None or prev['sha'] == cur['sha']:
                continue
            name = f'diffs/{prev["sha"][:16]}-{cur["sha"][:16]}.html'
            path = os.path.join(out_dir, name)
            if not os.path.exists(path):
                fa = _load_json(os.path.join(out_dir, 'cache', prev['facts_key'] + '.json'))['facts']
                fb = _load_json(os.path.join(out_dir, 'cache', cur['facts_key'] + '.json'))['facts']
                changes = darshan_triage.diff_facts(fa, fb)
                write_text(path, darshan_triage.render_html(changes, prev['rel'], cur['rel']))
            cur['diff'] = cur['diff_prev'] = name


def summary_bands(rows, mode):
    """The logs to summarise, most wanted first: [flagged and failed] (+ [newest of each check],
    [the rest] with mode 'all'), each band a {sha: log} without logs already in an earlier band."""
    if mode == 'none':
        return []
    readable = [r for r in rows if r.get('facts_key')]
    flagged = [r for r in readable if r['verdict'] == 'fail' or r.get('reframe_result') == 'fail']
    bands = [flagged]
    if mode == 'all':
        bands += [[g[-1] for g in _groups(rows).values()], readable]
    out, seen = [], set()
    for band in bands:
        wanted = {}
        for r in sorted(band, key=lambda r: r['date'], reverse=True):
            if r['sha'] not in seen:
                seen.add(r['sha'])
                wanted[r['sha']] = r['log']
        out.append(wanted)
    return out


def _attach_summaries(rows, out_dir, errors):
    for row in rows:
        sha = row.get('sha')
        have = sha and os.path.exists(os.path.join(out_dir, 'summaries', sha + '.html'))
        row['summary'] = f'summaries/{sha}.html' if have and row.get('facts_key') else None
        if errors.get(sha) and errors[sha] not in row['message']:
            row['message'] = (row['message'] + '; ' if row['message'] else '') + errors[sha]


def write_site(rows, root, out_dir, mode):
    """index.html, index.json and one page per log (unchanged pages are not rewritten)."""
    from postprocess.darshan import page as darshan_page
    for row in rows:
        write_if_changed(os.path.join(out_dir, row['page']), darshan_page.render_log(row, mode))
    write_text(os.path.join(out_dir, 'index.json'), json.dumps(darshan_page.json_rows(rows), indent=1))
    write_text(os.path.join(out_dir, 'index.html'), darshan_page.render_index(
        rows, root, mode, capture_reasons(root) if not rows else []))


def build_index(root, out_dir, jobs=None, summaries='flagged', progress=None):
    """Write OUT_DIR/index.html, index.json, logs/, diffs/, summaries/ (+ caches). Returns (rows, seconds).

    ``summaries``: 'flagged' (default), 'all' or 'none' (True and False mean 'all' and 'none')."""
    mode = {True: 'all', False: 'none'}.get(summaries, summaries)
    if mode not in SUMMARY_MODES:
        raise ValueError(f'summaries must be one of {", ".join(SUMMARY_MODES)}: {summaries!r}')
    say = progress or (lambda msg: None)
    t0 = time.time()
    os.makedirs(out_dir, exist_ok=True)
    rows = build_rows(root, out_dir, jobs, progress)
    link_previous(rows, out_dir)
    errors = {}
    _attach_summaries(rows, out_dir, errors)
    write_site(rows, root, out_dir, mode)
    say(f'index of {len(rows)} logs written ({time.time() - t0:.1f} s)')
    for n, band in enumerate(summary_bands(rows, mode)):
        new = make_summaries(band, os.path.join(out_dir, 'summaries'), jobs or os.cpu_count() or 1)
        if new:
            errors.update(new)
            _attach_summaries(rows, out_dir, errors)
            write_site(rows, root, out_dir, mode)
            say(f'{len(new)} summaries made ({["flagged and failed", "newest of each check", "the rest"][n]}, '
                f'{time.time() - t0:.1f} s)')
    return rows, time.time() - t0
