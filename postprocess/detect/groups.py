"""Levels of many series at once: a partition's iobench checks (``stack``, or ``system`` when fio
fell too), one library's checks (``backend=hdf5``), one check family's (``check=MDDatasets``).

A group's level on a night is the median, over its members that ran, of each member's fall
against its own usual level (the median of its ``window`` nights before): what the members'
measurements say, never a level relative to a fitted factor. It is judged by the same rules as a
series (postprocess/detect/rules.py). fio (the filesystem's own reading) and operation rates are in
no group. A group with ``min_group`` bandwidth-bound members (median phase >= ``group_seconds``)
is read on those only.
"""
import numpy as np

from postprocess.common.findings import group_keys
from postprocess.detect.levels import is_baseline, is_rate
from postprocess.detect.rules import Level, accepted_from_all, trailing_medians


class GroupLevel(Level):
    """A group's median member fall per night; ``members`` its series, ``read_on`` those it was
    read on each night, ``basis_at`` the least phase time they were chosen by (None: all)."""

    def __init__(self, system, partition, phase_id, scope, params, members, t, y, read_on,
                 basis_at, rerun):
        super().__init__(t, y, rerun)
        self.system, self.partition, self.phase_id = system, partition, phase_id
        self.scope, self.params, self.members = scope, params, members
        self.read_on, self.basis_at = read_on, basis_at      # per night: its members read on

    def count(self, m):
        return len(self.read_on[m])


def deviations(level, opt):
    """{night index: (fall against the member's usual level, that usual level)} of one series."""
    out = {}
    y, w = level.y, opt['window']
    medians = trailing_medians(y, w)          # every night's, where nothing cuts its window
    for m, a in enumerate(accepted_from_all(level, opt).tolist()):
        if m - max(a, m - w) < opt['min_nights']:
            continue
        usual = float(medians[m]) if a <= max(0, m - w) else float(np.median(y[a:m]))
        out[int(level.t[m])] = (float(y[m]) - usual, usual, m)
    return out


def plan(levels, opt):
    """[(partition, phase_id, scope, params, members)] for the series of one system."""
    by_slot = {}
    for lv in levels:
        if is_baseline(lv.params) or is_rate(lv.params):
            continue
        by_slot.setdefault((lv.partition, lv.phase_id), []).append(lv)
    out = []
    for (partition, phase_id), checks in sorted(by_slot.items()):
        if len(checks) >= opt['min_group']:
            out.append((partition, phase_id, 'stack', '', checks))
        families = {}
        for lv in checks:
            for g in group_keys(lv.params, lv.key[3]):
                families.setdefault(g, []).append(lv)
        for g, trs in sorted(families.items()):
            if opt['min_group'] <= len(trs) < len(checks):
                out.append((partition, phase_id, 'group', g, trs))
    return out


def build(system, levels, opt):
    """[GroupLevel] of one system's series levels."""
    devs = {}
    out = []
    for partition, phase_id, scope, params, members in plan(levels, opt):
        for lv in members:
            if id(lv) not in devs:
                devs[id(lv)] = deviations(lv, opt)
        nights = sorted({t for lv in members for t in devs[id(lv)]})
        t, y, read, basis, rerun = [], [], [], [], {}
        for night in nights:
            here = [(lv, devs[id(lv)][night]) for lv in members if night in devs[id(lv)]]
            bound = [(lv, d) for lv, d in here
                     if (lv.seconds_at(d[2], opt['window']) or 0.0) >= opt['group_seconds']]
            read_on = bound if len(bound) >= opt['min_group'] else here
            if len(read_on) < opt['min_group']:
                continue
            t.append(night)
            y.append(float(np.median([d[0] for _, d in read_on])))
            read.append([lv for lv, _ in read_on])
            basis.append(opt['group_seconds'] if read_on is bound else None)
            again = [lv.rerun[d[2]] - d[1] for lv, d in read_on if d[2] in lv.rerun]
            if again:
                rerun[len(t) - 1] = float(np.median(again))
        if t:
            out.append(GroupLevel(system, partition, phase_id, scope, params, members, t, y,
                                  read, basis, rerun))
    return out


def moved(group, m, change, devs_of):
    """How many of the members a group was read on at position m fell at least half its change."""
    n, night = 0, int(group.t[m])
    for lv in group.read_on[m]:
        d = devs_of(lv).get(night)
        if d is not None and change and d[0] * change > 0 and abs(d[0]) >= abs(change) / 2:
            n += 1
    return n
