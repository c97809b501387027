"""What the machine was doing on each finding's night (load, fullness, other jobs), for the
history table's "machine" column: ``machine`` on every finding of detect's JSON.

Only the runs of the findings' nights are made records with their provenance
(history/store.py ``runs_of_nights``), so a nightly's cost does not grow with the history.
"""
from postprocess.history.store import runs_of_nights
from postprocess.why import provenance
from postprocess.why.annotate import FindingRuns, index_runs


def text(state):
    """'load 2.0 · 41 % full · 3 jobs' (what was recorded)."""
    parts = []
    if 'load' in state:
        parts.append(f'load {state["load"]:g}')
    if 'used' in state:
        parts.append(f'{state["used"]} % full')
    if 'lfs_used' in state:
        parts.append(f'Lustre {state["lfs_used"]} % full')
    if 'other_jobs' in state:
        parts.append(f'{state["other_jobs"]} other jobs')
    for name, value in (state.get('fs') or {}).items():
        parts.append(f'{name} {value:g}')          # the file system's own telemetry
    return ' · '.join(parts)


def add_state(findings, history):
    """Give each finding ``machine``: the state recorded by its runs on its night (in place)."""
    if not findings or not len(history.sessions):
        return findings
    runs = runs_of_nights(history, {f['night'] for f in findings})
    index = {k: FindingRuns(v) for k, v in index_runs(runs).items()}
    for f in findings:
        part = index.get((f['system'], f['partition']))
        mine = [r['provenance'] for r in (part(f).get(f['night'], []) if part else [])]
        state = provenance.state(mine)
        if state:
            f['machine'] = state
    return findings
