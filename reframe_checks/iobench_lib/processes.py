"""One measurement over several iobench processes: a check's ``processes`` > 1 (base.py).

Why: a metadata rate belongs to the process as much as to the metadata service. On this machine
MDEmptyFiles' create rate moved 9-11 % (sd) from one iobench process to the next, its open+close
rate 11-17 %, while the rounds they ran in moved 2-3 % and 0-2 % (8 rounds x 4 processes, each in
its own new directory); the repetitions inside one
process share its luck (its directory's placement, its ranks' cores). A night's rate read from one
process wanders as much as that, and no test can see a 20 % slower metadata service through it.
So such a check runs ``processes`` launches, each in its own run directory (a sibling of the first,
as a new run's would be), and its repetitions are all of theirs: the perflog line's repetitions,
its medians and the detector's within-night spread then carry the process-to-process wander.

Pure functions, no ReFrame: the run directories, the extra launch lines, the merged document.
"""
import shlex

from contract.process_files import json_name, log_name  # noqa: F401 (base.py asks processes.)


def run_dirs(first, count):
    """The run directories of ``count`` processes: the first and its siblings ``first.pN``."""
    return [first] + [f'{first}.p{i}' for i in range(1, count)]


def options_for(opts, i, run_dir):
    """iobench's options for process ``i``: its own --dir and --json."""
    out = list(opts)
    out[out.index('--dir') + 1] = run_dir
    out[out.index('--json') + 1] = json_name(i)
    return out


def extra_launches(launcher, executable, opts, dirs, darshan_log=None):
    """Shell lines launching processes 1.. after the first (the job script's own launch): each
    with the same launcher and options but its own run directory and result file. A Darshan log
    of the first process is not overwritten: the others write theirs beside it (log_name)."""
    lines = []
    for i, d in enumerate(dirs[1:], start=1):
        exe = executable
        if darshan_log:
            exe = exe.replace(shlex.quote(f'DARSHAN_LOGFILE={darshan_log}'),
                              shlex.quote(f'DARSHAN_LOGFILE={log_name(darshan_log, i)}'))
        lines.append(' '.join([launcher, exe] + [shlex.quote(o) for o in options_for(opts, i, d)]))
    return lines


def merge(docs):
    """One result document of the processes' documents (in launch order): the first's, with the
    repetitions of all (numbered on, each marked with its ``process``), ``processes`` and every
    process's ``commands``. A missing or failed process's document is returned as it is (None or
    its error), so sanity names what went wrong, never a partial merge."""
    for doc in docs:
        if doc is None or doc.get('status') != 'ok':
            return doc
    if len(docs) == 1:
        return docs[0]
    out = dict(docs[0])
    reps = []
    for i, doc in enumerate(docs):
        for rep in doc.get('repetitions') or []:
            reps.append({**rep, 'rep': len(reps), 'process': i})
    out.update(repetitions=reps, processes=len(docs),
               commands=[doc.get('command') for doc in docs])
    return out
