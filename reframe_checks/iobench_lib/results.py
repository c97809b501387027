"""Reading an iobench result document (docs/CONTRACT.md section 2) into what the checks log.

Pure functions, no ReFrame: the regression key (iob_params), the raw repetitions (iob_reps), the
provenance string (iob_provenance), the sanity problems and the performance values.
"""
import json
import os
import statistics
import urllib.parse

from contract.perflog import PHASES

SCHEMA = 'iobench-result/1'


def _quote(value):
    # ',', '=', '|' and '%' separate or frame fields in the perflog; percent-encode them in values.
    return urllib.parse.quote(str(value), safe=' !"#$&\'()*+-./:;<>?@[]^_`{}~')


def params_key(backend, mode, pattern, ranks, size, stripe, params=None, hints=None):
    """`backend=..,mode=..,pattern=..,ranks=..,size=..,stripe=..[,KEY=..][,hint.KEY=..]`, keys
    sorted: with system/partition/environ/check it identifies a measurement series (CONTRACT §3).
    --param knobs appear under their own key, MPI-IO hints as hint.KEY (both change performance)."""
    fields = {'backend': backend, 'mode': mode, 'pattern': pattern, 'ranks': ranks,
              'size': size, 'stripe': stripe}
    for key, val in (params or {}).items():
        if key in fields:
            raise ValueError(f'--param key {key!r} clashes with a regression key field')
        fields[key] = val
    for key, val in (hints or {}).items():
        fields[f'hint.{key}'] = val
    return ','.join(f'{k}={_quote(fields[k])}' for k in sorted(fields))


def load(path):
    """The parsed result document, or None if the file is missing or not JSON."""
    try:
        with open(path) as fp:
            return json.load(fp)
    except (OSError, ValueError):
        return None


# the metadata phase (mdfiles' "metadata" member) that a phase object times
MD_PHASE = {'write': 'create', 'read': 'read'}


def _amount(rep, phase):
    """What a repetition's phase moved: its bytes, or for a phase that moves none (mdfiles
    filesize=0, empty files) its operations, so that B/S stays the phase's rate and the history
    judges ops/s of a metadata-bound check (a 0 would be no level at all; CONTRACT §3)."""
    nbytes = rep[phase]['bytes']
    if nbytes == 0:
        ops = ((rep.get('metadata') or {}).get(MD_PHASE[phase]) or {}).get('ops')
        if ops:
            return ops
    return nbytes


def reps_string(doc):
    """`write=B:S,B:S;read=B:S`: bytes (operations for empty files) and total_s of every
    repetition, raw (CONTRACT §3)."""
    parts = []
    for phase in PHASES:
        reps = [r for r in doc.get('repetitions', []) if r.get(phase)]
        if reps:
            parts.append(phase + '=' + ','.join(f"{_amount(r, phase)}:{r[phase]['total_s']!r}"
                                                for r in reps))
    return ';'.join(parts)


def compact_json(obj):
    """One-line JSON without '|' (escaped as \\u007c, still valid JSON) for a perflog field."""
    return json.dumps(obj, separators=(',', ':'), sort_keys=True).replace('|', '\\u007c')


def provenance(doc):
    """The provenance members taken from the result document."""
    keys = ('command', 'library_versions', 'hints_in_effect', 'hints_requested', 'params',
            'sync_method', 'cache_defeat', 'cache_defeated', 'read_placement', 'fs_type', 'hosts', 'nodes',
            'started', 'processes', 'commands')
    return {k: doc.get(k) for k in keys if k in doc}


def problems(doc, *, backend, mode, pattern, ranks, exitcode, keep=False, stderr_tail=''):
    """Everything wrong with a run, as sentences; an empty list means the run is sane."""
    if doc is None:
        msg = f'no result document (iobench exit status {exitcode})'
        return [msg + (f'; stderr: {stderr_tail}' if stderr_tail else '')]
    out = []
    if exitcode != 0:
        out.append(f'iobench exit status {exitcode}' + (f'; stderr: {stderr_tail}' if stderr_tail else ''))
    if doc.get('schema') != SCHEMA:
        out.append(f"schema {doc.get('schema')!r}, expected {SCHEMA!r}")
    if doc.get('status') != 'ok':
        out.append(f"status {doc.get('status')!r}: {doc.get('error')}")
    if doc.get('verify') is not True:
        out.append('data were not verified (verify is not true)')
    for key, want in (('backend', backend), ('mode', mode), ('pattern', pattern), ('ranks', ranks)):
        if doc.get(key) != want:
            out.append(f'{key} is {doc.get(key)!r}, the check asked for {want!r}')
    total = doc.get('bytes_total')
    reps = doc.get('repetitions') or []
    if not reps:
        out.append('no repetitions in the result')
    for rep in reps:
        k = rep.get('rep')
        for phase in PHASES:
            ph = rep.get(phase)
            if ph is None:
                continue
            if ph.get('bytes') != total:
                out.append(f'rep {k} {phase}: {ph.get("bytes")} bytes, expected bytes_total {total}')
            if phase == 'read' and ph.get('verified') is not True:
                out.append(f'rep {k} read: not verified')
        if not keep:
            left = [f for f in rep.get('files', []) if os.path.exists(f)]
            if left:
                out.append(f'rep {k}: data files not deleted: {", ".join(left[:3])}')
    return out


def _median(values):
    return statistics.median(values) if values else None


def perf_values(doc):
    """{name: (value, unit)}: medians over repetitions of bandwidths (MiB/s) and open/close times."""
    out = {}
    reps = doc.get('repetitions') or []
    for phase in PHASES:
        rows = [r[phase] for r in reps if r.get(phase)]
        if not rows:
            continue
        if not any(r['bytes'] for r in rows):
            pass     # no data moved (empty files): no MiB/s; <phase>_ops below says it
        elif phase == 'read' and doc.get('cache_defeated') is False:
            # a pagepool-like cache served (part of) the read: not disk bandwidth, not history
            out['read_cache_defeated'] = (0, 'bool')
        else:
            out[f'{phase}_bw'] = (_median([r['bw_MiBps'] for r in rows]), 'MiB/s')
            out[f'{phase}_access_bw'] = (_median([r['access_bw_MiBps'] for r in rows]), 'MiB/s')
        out[f'{phase}_open_s'] = (_median([r['open_s'] for r in rows]), 's')
        out[f'{phase}_close_s'] = (_median([r['close_s'] for r in rows]), 's')
    # Worst page-cache residency before a timed read (0 = the drop worked): logged, so a read
    # figure that came partly from memory can be told apart in history.
    resident = [r['read'].get('cache_resident_before_read') for r in reps if r.get('read')]
    resident = [x for x in resident if isinstance(x, (int, float))]
    if resident:
        out['read_cache_resident'] = (max(resident), 'fraction')
    # self-timed metadata patterns (mdfiles, mddatasets): repetition member "metadata" holds
    # {phase: {"ops_per_s": ..}} -> <phase>_ops, and {phase: {"<step>_s": ..}} -> md_<phase>_<step>_s
    mds = [r['metadata'] for r in reps if isinstance(r.get('metadata'), dict)]
    for phase in (mds[0] if mds else {}):
        steps = [md[phase] for md in mds if isinstance(md.get(phase), dict)]
        for key in (steps[0] if steps else {}):
            if key == 'ops_per_s':
                out[f'{phase}_ops'] = (_median([s[key] for s in steps]), 'ops/s')
            elif key.endswith('_s') and key != 'total_s':
                out[f'md_{phase}_{key}'] = (_median([s[key] for s in steps]), 's')
    return out
