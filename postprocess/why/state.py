"""What the machine was doing on each finding's night (load, fullness, other jobs), for the
history table's "machine" column: ``machine`` on every finding of detect's JSON.

Only the perflog lines of the findings' nights are parsed with their provenance (a line's first
ten bytes are its completion date; the night and the day after it are read, for a session that
crossed midnight), so a nightly's cost does not grow with the history.
"""
import datetime

from postprocess.history.perflog import Diagnostics, line_filter, read_perflog, walk_perflogs
from postprocess.why import provenance
from postprocess.why.annotate import matches_finding, index_runs


def _days(nights):
    out = set()
    for n in nights:
        try:
            day = datetime.date.fromisoformat(n)
        except (TypeError, ValueError):
            continue
        out.update({day.isoformat().encode(), (day + datetime.timedelta(days=1)).isoformat()
                   .encode()})
    return out


def runs_of_nights(roots, nights, system=None, this_run=None):
    """Run records (with provenance) of the perflog lines completed on ``nights`` (+1 day)."""
    days = _days(nights)
    runs, diag = [], Diagnostics()
    if not days:
        return runs
    for path, ranges in walk_perflogs(roots, diag, this_run):
        wanted, offset = set(), 0
        try:
            with open(path, 'rb') as fp:
                for raw in fp:
                    if raw[:10] in days:
                        wanted.add(offset)
                    offset += len(raw)
        except OSError:
            continue
        if not wanted:
            continue
        base = line_filter(path, ranges)
        runs += read_perflog(path, diag, keep=lambda o, w=wanted, b=base:
                             o in w and (b is None or b(o)))
    return [r for r in runs if system is None or r['system'] == system]


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
    return ' · '.join(parts)


def add_state(findings, args):
    """Give each finding ``machine``: the state recorded by its runs on its night (in place)."""
    if not findings or not getattr(args, 'perflogs', None):
        return findings
    runs = runs_of_nights(args.perflogs, {f['night'] for f in findings}, args.system,
                          getattr(args, 'this_run', None))
    index = index_runs(runs)
    for f in findings:
        mine = [r['provenance'] for r in index.get((f['system'], f['partition']), {})
                .get(f['night'], []) if matches_finding(r, f)]
        state = provenance.state(mine)
        if state:
            f['machine'] = state
    return findings
