"""Static HTML index of every Darshan log under a results tree (``python -m postprocess darshan-index``).

One row per log: system, partition, environ, check, parameters, date, iobench and Darshan
bandwidth, ReFrame's result and the Darshan assertions' verdict (checks.py), a link to the
log's PyDarshan summary report and one to the diff with the previous run of the same check.
Context comes from what lies beside the log (iobench's result.json) and from ReFrame run reports
(``runs[].testcases[]``, matched by the test's output or stage directory); a log without either
still gets a row with its counters and a note.

Work is cached in OUT_DIR by the log's sha256: ``cache/<sha>-<files>.json`` (facts, computed in a
process pool so a log that crashes darshan-util costs only its own row) and
``summaries/<sha>.html`` (``python -m darshan summary``, one subprocess per new log, in parallel).
A bad log (truncated, corrupt, non-MPI, no POSIX module, odd file name) is a message in its row,
never the end of the report. Every file is written atomically (tmp + rename).
"""
import concurrent.futures as cf
import hashlib
import json
import os
import subprocess
import sys
import time

from postprocess.common.atomic import atomic_path, write_text
from postprocess.darshan.results import RESULT_SCHEMA, load_json as _load_json, result_beside  # noqa: F401

SUMMARY_TIMEOUT_S = 900


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as fp:
        for block in iter(lambda: fp.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


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


def _facts_job(log, files):
    """Worker: (facts, error) for one log (runs in a child process)."""
    from postprocess.darshan import facts as darshan_facts
    try:
        report = darshan_facts.open_log(log)
        return darshan_facts.log_facts(report, files), None
    except darshan_facts.DarshanLogError as err:
        return None, str(err)
    except Exception as err:  # a log PyDarshan chokes on must not end the report
        return None, f'PyDarshan could not read this log ({type(err).__name__}: {err})'


def _cache_key(sha, files):
    return sha + '-' + hashlib.sha256(json.dumps(sorted(files or [])).encode()).hexdigest()[:12] \
        if files is not None else sha + '-all'


def compute_facts(items, cache_dir, jobs):
    """items: [(key, log, files)] -> {key: (facts, error)}, cached as JSON in cache_dir."""
    out, todo = {}, []
    for key, log, files in items:
        cached = _load_json(os.path.join(cache_dir, key + '.json'))
        if isinstance(cached, dict) and 'facts' in cached:
            out[key] = (cached['facts'], cached['error'])
        elif key not in dict((k, 1) for k, _, _ in todo):
            todo.append((key, log, files))

    def store(key, value):
        out[key] = value
        write_text(os.path.join(cache_dir, key + '.json'), json.dumps({'facts': value[0], 'error': value[1]}))

    pending = list(todo)
    try:
        with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
            futs = {pool.submit(_facts_job, log, files): key for key, log, files in pending}
            for fut in cf.as_completed(futs):
                store(futs[fut], fut.result())
    except cf.process.BrokenProcessPool:
        # A log crashed darshan-util in C: redo the rest one per process so only it is marked.
        for key, log, files in pending:
            if key in out:
                continue
            try:
                with cf.ProcessPoolExecutor(max_workers=1) as one:
                    store(key, one.submit(_facts_job, log, files).result())
            except cf.process.BrokenProcessPool:
                store(key, (None, 'darshan-util crashed reading this log (corrupt log?)'))
    return out


def make_summary(log, dest):
    """PyDarshan's HTML summary of ``log`` at ``dest`` (atomic). Returns an error line or None."""
    with atomic_path(dest) as tmp:
        try:
            res = subprocess.run([sys.executable, '-m', 'darshan', 'summary', os.path.abspath(log),
                                  '--output', tmp], capture_output=True, text=True,
                                 timeout=SUMMARY_TIMEOUT_S, cwd=os.path.dirname(tmp))
        except subprocess.TimeoutExpired:
            raise RuntimeError(f'darshan summary timed out after {SUMMARY_TIMEOUT_S} s') from None
        if res.returncode != 0 or not os.path.getsize(tmp):
            tail = (res.stderr.strip().splitlines() or ['no output'])[-1]
            raise RuntimeError(f'darshan summary failed: {tail}')


def make_summaries(wanted, summary_dir, jobs):
    """wanted: {sha: log}. Creates missing summaries/<sha>.html; returns {sha: error or None}."""
    errors = {}
    missing = {sha: log for sha, log in wanted.items()
               if not os.path.exists(os.path.join(summary_dir, sha + '.html'))}

    def one(sha, log):
        try:
            make_summary(log, os.path.join(summary_dir, sha + '.html'))
            return sha, None
        except (RuntimeError, OSError) as err:
            return sha, str(err)

    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        for sha, err in pool.map(lambda kv: one(*kv), missing.items()):
            errors[sha] = err
    return errors


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


def build_rows(root, out_dir, jobs=None, summaries=True, progress=None):
    """Everything the page needs, one dict per log; caches facts and summaries in out_dir."""
    from postprocess.darshan import checks as darshan_checks, facts as darshan_facts
    jobs = jobs or os.cpu_count() or 1
    logs = find_logs(root, skip=out_dir)
    cases = run_report_cases(root)
    entries = []
    for log in logs:
        try:
            sha = sha256_file(log)
        except OSError as err:
            entries.append({'log': log, 'sha': None, 'error': f'cannot read log: {err.strerror}'})
            continue
        result = result_beside(log)
        files = darshan_facts.files_from_result(result) if result else None
        entries.append({'log': log, 'sha': sha, 'result': result, 'files': files,
                        'key': _cache_key(sha, files)})
    facts = compute_facts([(e['key'], e['log'], e['files']) for e in entries if e.get('sha')],
                          os.path.join(out_dir, 'cache'), jobs)
    if progress:
        progress(f'facts for {len(entries)} logs ready')
    summary_errors = {}
    if summaries:
        wanted = {e['sha']: e['log'] for e in entries if e.get('sha') and facts[e['key']][0] is not None}
        summary_errors = make_summaries(wanted, os.path.join(out_dir, 'summaries'), jobs)
    rows = []
    for e in entries:
        result = e.get('result')
        f, err = facts.get(e.get('key'), (None, e.get('error')))
        row = {'log': e['log'], 'rel': os.path.relpath(e['log'], root), 'sha': e.get('sha')}
        row.update(_context(e['log'], root, cases, result))
        row['iobench_write'] = _median_bw(result, 'write') if result else None
        row['iobench_read'] = _median_bw(result, 'read') if result else None
        row['darshan_bw'] = darshan_checks.perf_figures(f)['darshan_bw'] if f else None
        start = f['start_time'] if f else None
        row['date'] = (result or {}).get('started') or (
            time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(start)) if start else '')
        if err:
            row['verdict'], row['message'] = 'error', err
        elif f['kind'] != 'ok' and not f['kind'].startswith('Darshan ran out') and not (
                f['non_mpi'] and result and int(result.get('ranks') or 0) == 1):
            row['verdict'], row['message'] = 'n/a', f['kind']
        elif not result:
            row['verdict'], row['message'] = 'n/a', 'no iobench result.json beside the log: nothing asserted'
        else:
            bad = darshan_checks.failures(darshan_checks.check_run(f, result))
            row['verdict'] = 'fail' if bad else 'pass'
            row['message'] = '; '.join(f'{v["check"]}: {v["detail"]}' for v in bad) or (
                f['kind'] if f['kind'] != 'ok' else '')
        row['summary'] = (f'summaries/{e["sha"]}.html' if summaries and f is not None
                          and not summary_errors.get(e['sha']) else None)
        if summary_errors.get(e.get('sha')):
            row['message'] = (row['message'] + '; ' if row['message'] else '') + summary_errors[e['sha']]
        row['facts_key'] = e.get('key') if f else None
        rows.append(row)
    return rows


def link_previous(rows, out_dir, facts_loader=None):
    """Give each row a diff link to the previous run of the same check (same key, earlier date)."""
    from postprocess.darshan import triage as darshan_triage
    groups = {}
    for row in rows:
        if row.get('facts_key') and row.get('params'):  # only runs whose identity is known
            key = (row['system'], row['partition'], row['environ'], row['check'], row['params'])
            groups.setdefault(key, []).append(row)
    for group in groups.values():
        group.sort(key=lambda r: (r['date'], r['log']))
        for prev, cur in zip(group, group[1:]):
            if prev['sha'] == cur['sha']:
                continue
            name = f'diffs/{prev["sha"][:16]}-{cur["sha"][:16]}.html'
            path = os.path.join(out_dir, name)
            if not os.path.exists(path):
                fa = _load_json(os.path.join(out_dir, 'cache', prev['facts_key'] + '.json'))['facts']
                fb = _load_json(os.path.join(out_dir, 'cache', cur['facts_key'] + '.json'))['facts']
                changes = darshan_triage.diff_facts(fa, fb)
                write_text(path, darshan_triage.render_html(changes, prev['rel'], cur['rel']))
            cur['diff'] = name


def build_index(root, out_dir, jobs=None, summaries=True, progress=None):
    """Write OUT_DIR/index.html (+ cache, summaries, diffs). Returns (rows, seconds)."""
    from postprocess.darshan import page as darshan_page
    t0 = time.time()
    os.makedirs(out_dir, exist_ok=True)
    rows = build_rows(root, out_dir, jobs, summaries, progress)
    link_previous(rows, out_dir)
    write_text(os.path.join(out_dir, 'index.html'), darshan_page.render(rows, root))
    return rows, time.time() - t0
