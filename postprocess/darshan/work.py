"""The expensive per-log work of the Darshan index, cached by the log's content (sha256).

``compute_cached`` runs a job per log in a process pool (so a log that crashes darshan-util in C
costs only its own row) and keeps each answer as ``<cache_dir>/<key>.json``; ``make_summaries``
runs PyDarshan's HTML summary (``python -m darshan summary``) in a process pool too. Every
file is written atomically (tmp + rename), so an interrupted run leaves a usable cache.
"""
import concurrent.futures as cf
import contextlib
import hashlib
import io
import json
import os
import warnings

from postprocess.common.atomic import atomic_path
from postprocess.darshan.results import load_json


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as fp:
        for block in iter(lambda: fp.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


def write_cached(path, text):
    """Atomic (tmp + rename) but not fsynced: a cache entry or page lost in a crash is remade,
    and an fsync per file costs ~7 ms here, seconds over a nightly's logs."""
    with atomic_path(path) as tmp:
        with open(tmp, 'w', encoding='utf-8') as fp:
            fp.write(text)


def write_if_changed(path, text):
    """Write unless the file already holds ``text`` (warm reruns rewrite nothing)."""
    try:
        with open(path, encoding='utf-8') as fp:
            if fp.read() == text:
                return False
    except (OSError, UnicodeDecodeError):
        pass
    write_cached(path, text)
    return True


def compute_cached(items, cache_dir, jobs, job, valid=lambda doc: True, crashed=None, progress=None):
    """items: [(key, *args)] -> {key: doc}; ``job(*args)`` returns a JSON-able dict.

    A cached ``<key>.json`` that ``valid`` accepts is reused; the rest run in a process pool. A job
    whose worker process died gets ``{'error': ..., **crashed}`` (cached too: it would crash again)."""
    out, todo = {}, {}
    for key, *args in items:
        cached = load_json(os.path.join(cache_dir, key + '.json'))
        if isinstance(cached, dict) and valid(cached):
            out[key] = cached
        else:
            todo.setdefault(key, args)
    if not todo:
        return out

    def store(key, doc):
        out[key] = doc
        write_cached(os.path.join(cache_dir, key + '.json'), json.dumps(doc))
        if progress:
            progress(len(out))

    try:
        with cf.ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
            futs = {pool.submit(job, *args): key for key, args in todo.items()}
            for fut in cf.as_completed(futs):
                store(futs[fut], fut.result())
    except cf.process.BrokenProcessPool:
        # A log crashed darshan-util in C: redo the rest one per process so only it is marked.
        for key, args in todo.items():
            if key in out:
                continue
            try:
                with cf.ProcessPoolExecutor(max_workers=1) as one:
                    store(key, one.submit(job, *args).result())
            except cf.process.BrokenProcessPool:
                store(key, {'error': 'darshan-util crashed reading this log (corrupt log?)', **(crashed or {})})
    return out


def make_summary(log, dest):
    """PyDarshan's HTML summary of ``log`` at ``dest`` (atomic): an error line, or None.

    Runs PyDarshan's ``darshan summary`` command in this process (a pool worker), which saves
    the ~2.5 s of CPU a fresh interpreter spends importing PyDarshan and matplotlib."""
    import argparse
    from darshan.cli import summary
    parser = argparse.ArgumentParser()
    summary.setup_parser(parser)
    try:
        with atomic_path(dest) as tmp, contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter('ignore')
            summary.main(parser.parse_args([os.path.abspath(log), '--output', tmp]))
            if not os.path.getsize(tmp):
                raise RuntimeError('empty report')
    except (Exception, SystemExit) as err:   # PyDarshan's plots fail on odd logs: keep the row
        return f'darshan summary failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ""}'
    return None


def make_summaries(wanted, summary_dir, jobs):
    """wanted: {sha: log}, most wanted first. Creates missing summaries/<sha>.html in that order
    (a pool runs tasks first in, first out); returns {sha: error line or None} for the ones tried."""
    missing = [(sha, log) for sha, log in wanted.items()
               if not os.path.exists(os.path.join(summary_dir, sha + '.html'))]
    errors = {}
    chunk = max(1, jobs) * 8   # fresh workers per chunk: matplotlib's caches grow over many reports
    for start in range(0, len(missing), chunk):
        errors.update(_summaries_in_pool(missing[start:start + chunk], summary_dir, jobs))
    return errors


def _summaries_in_pool(todo, summary_dir, jobs):
    errors = {}
    try:
        with cf.ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
            futs = {pool.submit(make_summary, log, os.path.join(summary_dir, sha + '.html')): sha
                    for sha, log in todo}
            for fut in cf.as_completed(futs):
                errors[futs[fut]] = fut.result()
    except cf.process.BrokenProcessPool:   # a log crashed darshan-util: redo the rest one by one
        for sha, log in todo:
            if sha in errors:
                continue
            try:
                with cf.ProcessPoolExecutor(max_workers=1) as one:
                    errors[sha] = one.submit(make_summary, log, os.path.join(summary_dir, sha + '.html')).result()
            except cf.process.BrokenProcessPool:
                errors[sha] = 'darshan summary crashed on this log'
    return errors
