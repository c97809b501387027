"""Calibrate references from history: write configs/references/<system>.yaml.

Format (defined by contract/reference_file.py, read by ReFrame 4.10 via ``$ref``):

    require_reference: false
    BenchIO:                                   # check class name
      $index: [$partition, iob_params]
      'local:default':
        # calibrated 2026-11-01..2026-11-14: 14 runs; ...
        'backend=posix,mode=fpp,...':
          write_bw: [412.0, -0.25, null, MiB/s]   # [reference, lower, upper, unit], relative

The reference is the median over runs of the run's perf value (each already a median of its
repetitions); the tolerance comes from the spread of those run values: 4 robust standard
deviations (MAD-based, relative), at least ``MIN_TOL`` and at most ``MAX_TOL``. Bandwidths get
a lower bound (faster never fails; an upper bound already in the file -- a plausibility
ceiling -- is kept at the same absolute value), times (unit ``s``) an upper bound only. Only
``write_bw`` and ``read_bw`` unless asked (references assert on the median bandwidth).

Entries this command wrote carry a ``# calibrated ...`` comment (date range and run count); any
other entry is hand-set and kept unless ``overwrite``. Entries whose parameters have no runs in
the range are kept with a warning. The file is written atomically.
"""
import math
import os
import re

import numpy as np
import yaml

from contract.reference_file import INDEX
from postprocess.common import atomic

# References assert on the median bandwidth (robust to the outliers a shared file system has);
# other perf variables only on request.
DEFAULT_VARS = ('write_bw', 'read_bw')
MIN_TOL, MAX_TOL, SIGMAS, FEW_RUNS, FEW_RUNS_TOL = 0.10, 0.90, 4.0, 3, 0.50
STAMP = '# calibrated '
_KEY_LINE = re.compile(r"^(\s*)(?:'((?:[^']|'')*)'|\"((?:[^\"\\]|\\.)*)\"|([^\s:#][^:#]*?)):(\s|$)")


def class_name(check):
    """Display name 'BenchIO %backend=posix ...' -> class name 'BenchIO'."""
    return check.split(' ', 1)[0].split('%', 1)[0].strip()


def robust_rel_sd(values):
    logs = np.log(np.asarray(values, dtype=float))
    return 1.4826 * float(np.median(np.abs(logs - np.median(logs))))


def _round_sig(x, digits=4):
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, -int(math.floor(math.log10(abs(x)))) + digits - 1)


def entries_from_runs(runs, variables=DEFAULT_VARS):
    """{(class, 'sys:part', params): {var: (tuple, stamp, runs)}} from runs of one system."""
    grouped = {}
    for run in runs:
        where = (class_name(run['check']), f'{run["system"]}:{run["partition"]}', run['params'])
        for var, perf in run['perf'].items():
            if variables and var not in variables:
                continue
            value = perf.get('value')
            if value is None or not value > 0:
                continue
            slot = grouped.setdefault(where, {}).setdefault(var, {'values': [], 'unit': None,
                                                                   'days': []})
            slot['values'].append(value)
            slot['unit'] = perf.get('unit') or slot['unit']
            slot['days'].append(run['time'].date().isoformat())
    out = {}
    for where, per_var in grouped.items():
        for var, slot in per_var.items():
            vals = slot['values']
            median = float(np.median(vals))
            if len(vals) < FEW_RUNS:
                tol = FEW_RUNS_TOL
            else:
                tol = min(MAX_TOL, max(MIN_TOL, SIGMAS * robust_rel_sd(vals)))
            tol = round(tol, 2)
            smaller_is_better = (slot['unit'] or '').strip() == 's'
            bounds = [None, tol] if smaller_is_better else [-tol, None]
            stamp = (f'{min(slot["days"])}..{max(slot["days"])}: {len(vals)} runs; '
                     f'{var} median {_round_sig(median)} {slot["unit"] or ""}, '
                     f'tolerance {tol:.2f} = max({MIN_TOL}, {SIGMAS:g} robust SD)'.rstrip())
            out.setdefault(where, {})[var] = ([_round_sig(median)] + bounds + [slot['unit']], stamp,
                                              len(vals))
    return out


def _keep_ceiling(new, old):
    """A bandwidth entry keeps an existing upper bound (a plausibility ceiling, e.g. the device
    limit) re-expressed relative to the new reference."""
    ref, lower, upper, unit = new
    if (upper is None and lower is not None and isinstance(old, list) and len(old) >= 3
            and old[2] is not None and isinstance(old[0], (int, float)) and ref > 0):
        ceiling = old[0] * (1 + old[2])
        upper = round(max(0.0, ceiling / ref - 1.0), 2)
    return [ref, lower, upper, unit]


def read_stamps(path):
    """Paths (class, partition, params) of entries carrying a calibration stamp comment."""
    stamped, stack, pending = set(), [], False
    try:
        lines = open(path, encoding='utf-8').read().splitlines()
    except OSError:
        return stamped
    for line in lines:
        if line.lstrip().startswith(STAMP.strip()):
            pending = True
            continue
        match = _KEY_LINE.match(line)
        if not match or line.lstrip().startswith('#'):
            continue
        indent = len(match.group(1))
        key = (match.group(2).replace("''", "'") if match.group(2) is not None
               else yaml.safe_load(f'"{match.group(3)}"') if match.group(3) is not None
               else match.group(4).strip())
        stack = [(i, k) for i, k in stack if i < indent] + [(indent, key)]
        if pending and len(stack) == 3:
            stamped.add(tuple(k for _, k in stack))
        pending = False
    return stamped


def calibrate(runs, path, system, overwrite=False, warn=print, date_from=None, date_to=None,
              variables=DEFAULT_VARS):
    """Merge calibrated entries for ``system`` into the reference file at ``path`` (atomically).

    Returns (number of entries written, number kept as they were).
    """
    existing = {}
    if os.path.exists(path):
        with open(path, encoding='utf-8') as fp:
            existing = yaml.safe_load(fp) or {}
        if not isinstance(existing, dict):
            raise ValueError(f'{path}: top level is not a mapping; not touching it')
    stamped = read_stamps(path)
    new = entries_from_runs((r for r in runs if r['system'] == system), variables)
    if not new:
        raise ValueError(f'no runs of system {system!r} with perf values in the selected range')
    doc = {k: v for k, v in existing.items() if not isinstance(v, dict)}
    classes = {k: v for k, v in existing.items() if isinstance(v, dict)}
    stamps, written, kept = {}, 0, 0
    for cls, body in classes.items():
        if list(body.get('$index') or []) != INDEX:
            warn(f'{path}: {cls}: $index {body.get("$index")!r} is not {INDEX}; entry kept as is')
    for (cls, part, params), entry_vars in sorted(new.items()):
        body = classes.setdefault(cls, {'$index': list(INDEX)})
        if list(body.get('$index') or []) != INDEX:
            continue
        old = body.setdefault(part, {}).get(params)
        if old is not None and (cls, part, params) not in stamped and not overwrite:
            warn(f'{path}: {cls}.{part}.{params}: hand-set entry kept (use --overwrite to replace)')
            kept += 1
            continue
        body[part][params] = {var: _keep_ceiling(tup, (old or {}).get(var))
                              for var, (tup, _, _) in sorted(entry_vars.items())}
        stamps[(cls, part, params)] = [s for _, (_, s, _) in sorted(entry_vars.items())]
        if min(n for _, _, n in entry_vars.values()) < FEW_RUNS:
            warn(f'{path}: {cls}.{part}.{params}: fewer than {FEW_RUNS} runs, tolerance '
                 f'{FEW_RUNS_TOL} (calibrate again when more history exists)')
        written += 1
    for cls, body in classes.items():
        for part, entries in body.items():
            if part == '$index' or not isinstance(entries, dict):
                continue
            for params in entries:
                if (cls, part, params) not in new:
                    if (cls, part, params) in stamped:
                        stamps[(cls, part, params)] = ['(earlier calibration; no runs in this range)']
                    warn(f'{path}: {cls}.{part}.{params}: no runs with these parameters in the '
                         f'range; entry kept')
    doc.update(classes)
    header = (f'# References for system {system!r}. Calibrated by `python -m postprocess calibrate`'
              f' from runs {date_from or "(first)"}..{date_to or "(last)"}.\n'
              f'# [reference, lower, upper, unit]: bounds relative to the reference; null = none.\n')
    atomic.write_text(path, header + dump(doc, stamps))
    return written, kept


def _q(key):
    if isinstance(key, str):
        return "'" + key.replace("'", "''") + "'"
    return str(key)


def _flow(value):
    text = yaml.safe_dump(value, default_flow_style=True, width=10 ** 6).strip()
    return text[:-3].strip() if text.endswith('\n...') else text     # scalar: drop '...'


def dump(doc, stamps):
    """YAML text in the layout above; entries in ``stamps`` get their calibration comments."""
    lines = []
    for key, value in doc.items():
        if not isinstance(value, dict):
            lines.append(f'{key}: {_flow(value)}')
    for cls, body in doc.items():
        if not isinstance(body, dict):
            continue
        lines.append(f'{cls}:')
        for part, entries in body.items():
            if part == '$index':
                lines.append(f'  $index: {_flow(entries)}')
                continue
            if not isinstance(entries, dict) or not isinstance(next(iter(entries.values()), {}), dict):
                lines.append(f'  {_q(part)}: {_flow(entries)}')      # not our layout: verbatim
                continue
            lines.append(f'  {_q(part)}:')
            for params, variables in entries.items():
                for stamp in stamps.get((cls, part, params), []):
                    lines.append(f'    {STAMP}{stamp}')
                lines.append(f'    {_q(params)}:')
                for var, tup in variables.items():
                    lines.append(f'      {var}: {_flow(list(tup) if isinstance(tup, tuple) else tup)}')
    return '\n'.join(lines) + '\n'
