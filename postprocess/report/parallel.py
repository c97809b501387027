"""Draw figures in forked worker processes: matplotlib is single-threaded and a report's ~60 PNGs
are independent, so two cores draw them in about half the time (bench/postprocess_speed.py).

Each task is a callable ``task(notes) -> [files]`` defined before the pool forks, so nothing but
its index and its result crosses a process boundary. A worker dies with the report (Linux
PR_SET_PDEATHSIG): a killed report leaves no process drawing into its directory. An exception in
a task (a full disk, say) is raised here after every worker has stopped; each figure is written
atomically, so nothing half-written stays.
"""
import concurrent.futures
import ctypes
import multiprocessing
import os
import signal

import ioregress_env

_TASKS = []
PR_SET_PDEATHSIG = 1


def workers():
    """Worker processes to use: the CPUs this process may run on, at most 4;
    $IOREGRESS_REPORT_JOBS overrides (1: draw in this process)."""
    text = ioregress_env.get('IOREGRESS_REPORT_JOBS') or ''
    if text.isdigit() and int(text) >= 1:
        return int(text)
    return max(1, min(4, len(os.sched_getaffinity(0))))


def _die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass                    # not Linux: the pool still ends when the report ends normally


def _run(index):
    notes = []
    return _TASKS[index](notes), notes


def run(tasks, jobs, meanwhile=lambda: None):
    """([(files, notes) per task], meanwhile()): the tasks in ``jobs`` forked workers while this
    process runs ``meanwhile`` (the Bokeh figures); in this process alone when ``jobs`` < 2."""
    global _TASKS
    if jobs < 2 or len(tasks) < 2 or 'fork' not in multiprocessing.get_all_start_methods():
        results = []
        for task in tasks:
            notes = []
            results.append((task(notes), notes))
        return results, meanwhile()
    _TASKS = list(tasks)
    try:
        with concurrent.futures.ProcessPoolExecutor(
                min(jobs, len(tasks)), mp_context=multiprocessing.get_context('fork'),
                initializer=_die_with_parent) as pool:
            futures = [pool.submit(_run, i) for i in range(len(tasks))]
            try:
                extra = meanwhile()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
            results = [future.result() for future in futures]
    finally:
        _TASKS = []
    return results, extra
