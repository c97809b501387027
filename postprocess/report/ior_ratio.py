"""iobench / IOR: the ratio of the two tools' bandwidths from the IOR comparison check.

reframe_checks/ior_compare.py runs IOR and `iobench --pattern ior` with identical parameters in one
job, alternating, and logs each tool as its own series: iob_params with ``pattern=ior`` and
``tool=iobench`` or ``tool=ior`` (otherwise equal). Each series' repetitions are the pairs, in pair
order, so repetition k of both series is pair k.

``ior_ratios(history)`` turns a ``postprocess.history.store.History`` into one row per
(system, partition, environ, API, mode, block size, transfer, segments, ranks, phase), from the
latest session in which both tools ran: the median of the per-pair ratios iobench/IOR when both
series have the same number of repetitions (``paired``), else the ratio of the medians. A ratio
outside [low, high] (default 0.9..1.1) is a finding: iobench's IOR layout does not cost what IOR's
does, i.e. the library path, not the access pattern, differs. Series of one tool only are
skipped (a comparison needs both).

Row keys (the report renders them; bandwidths in MiB/s, 2^20 bytes/s):
    system, partition, environ, api (iobench backend), mode, size (IOR -b in MiB, the check's size),
    block, transfer, segments, ranks, phase ('write' | 'read'), night (date of the session),
    iobench_MiBps, ior_MiBps (medians), ratio, pairs (number of pairs), paired (bool),
    finding (bool), finding_text (None or one sentence, e.g.
    "hdf5/collective write at 2 ranks, block 64m: iobench/IOR = 0.82, outside 0.90-1.10").
"""
import numpy as np

from postprocess.history.parse import parse_params
from postprocess.history.perflog import PHASES

LOW, HIGH = 0.9, 1.1
TOOLS = ('iobench', 'ior')


def _series(history):
    """{(system, partition, environ, params without tool): {tool: key id}} for pattern=ior keys."""
    out = {}
    for kid, key in enumerate(history.keys):
        system, partition, environ, _check, params = key
        p = parse_params(params)
        if p.get('pattern') != 'ior' or p.get('tool') not in TOOLS:
            continue
        rest = tuple(sorted((k, v) for k, v in p.items() if k != 'tool'))
        out.setdefault((system, partition, environ, rest), {})[p['tool']] = kid
    return out


def _ratio(a, b):
    """(ratio, paired): median of pair ratios when counts match, else ratio of medians."""
    if a.size == b.size:
        return float(np.median(a / b)), True
    return float(np.median(a) / np.median(b)), False


def ior_ratios(history, low=LOW, high=HIGH):
    """Rows of iobench/IOR ratios (see the module docstring), sorted by where, API, mode, size,
    ranks and phase. `low`/`high`: the band outside which a ratio is a finding."""
    groups = history.groups('bw_MiBps')
    rows = []
    for (system, partition, environ, rest), kids in _series(history).items():
        if set(kids) != set(TOOLS):
            continue
        params = dict(rest)
        for phase_id, phase in enumerate(PHASES):
            per_tool = {t: dict(groups.get((kids[t], phase_id), [])) for t in TOOLS}
            common = [s for s, _ in groups.get((kids['iobench'], phase_id), []) if s in per_tool['ior']]
            if not common:
                continue
            sid = common[-1]          # groups are ordered by session start: the latest one
            a, b = per_tool['iobench'][sid], per_tool['ior'][sid]
            ratio, paired = _ratio(a, b)
            finding = not (low <= ratio <= high)
            ranks = int(params['ranks']) if params.get('ranks', '').isdigit() else params.get('ranks')
            where = (f"{params.get('backend')}/{params.get('mode')} {phase} at {ranks} ranks, "
                     f"block {params.get('block', params.get('size'))}")
            rows.append({
                'system': system, 'partition': partition, 'environ': environ,
                'api': params.get('backend'), 'mode': params.get('mode'), 'size': params.get('size'),
                'block': params.get('block'), 'transfer': params.get('transfer'),
                'segments': params.get('segments'), 'ranks': ranks, 'phase': phase,
                'night': history.sessions[sid]['night'],
                'iobench_MiBps': float(np.median(a)), 'ior_MiBps': float(np.median(b)),
                'ratio': ratio, 'pairs': int(min(a.size, b.size)), 'paired': paired,
                'finding': finding,
                'finding_text': (f'{where}: iobench/IOR = {ratio:.2f}, outside {low:.2f}-{high:.2f}'
                                 if finding else None),
            })
    rows.sort(key=lambda r: (r['system'], r['partition'], r['environ'], str(r['api']), str(r['mode']),
                             str(r['size']), str(r['ranks']), PHASES.index(r['phase'])))
    return rows
