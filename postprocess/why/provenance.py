"""What differs between two nights' runs, from the provenance they recorded (iob_provenance).

``facts(prov)`` flattens one run's provenance into {label: value} for what can explain a change
of performance (library versions, compiler/build, kernel, filesystem client and mount options,
stripe layout and MPI-IO hints as read back, node list, the system's named environment
variables, the Spack lock); ``changes(before, after)`` names the labels whose values differ;
``state(provs)`` is what the machine was doing (load, fullness, other jobs) -- recorded by
reframe_checks/iobench_lib/machine.py.
"""
import statistics

# library_versions keys -> how an engineer writes them
LIBRARY = {'hdf5': 'HDF5', 'mpi': 'MPI', 'adios2': 'ADIOS2', 'sionlib': 'SIONlib',
           'iobench': 'iobench', 'darshan': 'Darshan', 'fio': 'fio'}
# first in a sentence: what most often explains a change
ORDER = ('HDF5', 'MPI', 'ADIOS2', 'SIONlib', 'iobench', 'compiler', 'kernel', 'Lustre client',
         'filesystem', 'mount options', 'ext4 journal', 'stripe layout', 'Spack lock', 'nodes')
MAX_VALUE = 80


def _short(value):
    text = value if isinstance(value, str) else ' '.join(str(value).split())
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + '…'


def facts(prov):
    """{label: value (str)} of one run's provenance; absent facts are absent, not empty."""
    if not isinstance(prov, dict):
        return {}
    out = {}
    for lib, version in (prov.get('library_versions') or {}).items():
        out[LIBRARY.get(lib, lib)] = _short(version)
    build = prov.get('build') if isinstance(prov.get('build'), dict) else {}
    for key in ('compiler', 'cc', 'c_compiler', 'spec', 'build_type'):
        if build.get(key):
            out['compiler' if key in ('compiler', 'cc', 'c_compiler') else f'build {key}'] = \
                _short(build[key])
    machine = prov.get('machine') if isinstance(prov.get('machine'), dict) else {}
    for key, label in (('kernel', 'kernel'), ('lustre_client', 'Lustre client'),
                       ('spack_lock', 'Spack lock')):
        if machine.get(key):
            out[label] = _short(machine[key])
    mount = machine.get('mount') if isinstance(machine.get('mount'), dict) else {}
    if mount.get('fstype'):
        out['filesystem'] = _short(f'{mount["fstype"]} {mount.get("source", "")}'.strip())
    if mount.get('options'):
        out['mount options'] = _short(mount['options'])
    if mount.get('journal'):
        out['ext4 journal'] = mount['journal']
    if machine.get('nodelist'):
        out['nodes'] = _short(','.join(map(str, machine['nodelist'])))
    for name, value in sorted((machine.get('env') or {}).items()):
        out[f'${name}'] = _short(value)
    lustre = prov.get('lustre') if isinstance(prov.get('lustre'), dict) else {}
    if lustre.get('layout') and isinstance(lustre['layout'], (dict, list)):
        out['stripe layout'] = _short(lustre['layout'])
    for key, value in sorted((prov.get('hints_in_effect') or {}).items()):
        out[f'hint {key}'] = _short(value)
    for key in ('sync_method', 'cache_defeat', 'fs_type'):
        if prov.get(key):
            out[key.replace('_', ' ')] = _short(prov[key])
    return out


def changes(before, after):
    """["HDF5 1.10.8 → 1.12.3", ...]: labels whose set of values differs between two lists of
    provenance dicts (the runs of the last good night and of the `since` night)."""
    fb = [facts(p) for p in before]
    fa = [facts(p) for p in after]
    labels = {k for f in fb + fa for k in f}
    out = []
    for label in sorted(labels, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k)):
        old = sorted({f[label] for f in fb if label in f})
        new = sorted({f[label] for f in fa if label in f})
        if old == new:
            continue
        out.append(f'{label} {"/".join(old) or "(not recorded)"} → '
                   f'{"/".join(new) or "(not recorded)"}')
    return out


def notes(provs):
    """Site notes (ci/nightly.sh --note) recorded by these runs, without repeats."""
    seen = []
    for p in provs:
        note = ((p or {}).get('machine') or {}).get('note') if isinstance(p, dict) else None
        if note and note not in seen:
            seen.append(note)
    return seen


def state(provs):
    """What the machine was doing over these runs: {'load': median 1-min load, 'used': fullest
    df %, 'lfs_used': ..., 'other_jobs': max, 'fs': {name: median}} (keys only when recorded;
    ``fs``: the file system's own telemetry of that moment, ``machine.fs_telemetry``, where a
    site's collector records it: server load, fullness, its share of the traffic)."""
    loads, used, lfs, jobs, fs = [], [], [], [], {}
    for p in provs:
        m = (p or {}).get('machine') if isinstance(p, dict) else None
        if not isinstance(m, dict):
            continue
        if isinstance(m.get('load'), list) and m['load']:
            loads.append(float(m['load'][0]))
        df = m.get('df') if isinstance(m.get('df'), dict) else {}
        if str(df.get('used', '')).rstrip('%').isdigit():
            used.append(int(df['used'].rstrip('%')))
        lfs_used = (m.get('lfs_df') or {}).get('used') if isinstance(m.get('lfs_df'), dict) else None
        if lfs_used and str(lfs_used).rstrip('%').isdigit():
            lfs.append(int(str(lfs_used).rstrip('%')))
        if isinstance(m.get('other_jobs'), int):
            jobs.append(m['other_jobs'])
        for name, value in (m.get('fs_telemetry') or {}).items():
            if isinstance(value, (int, float)):
                fs.setdefault(name, []).append(float(value))
    out = {}
    if loads:
        out['load'] = round(statistics.median(loads), 2)
    if used:
        out['used'] = max(used)
    if lfs:
        out['lfs_used'] = max(lfs)
    if jobs:
        out['other_jobs'] = max(jobs)
    if fs:
        out['fs'] = {name: round(statistics.median(v), 3) for name, v in sorted(fs.items())}
    return out


STATE_LABEL = (('load', 'load', ''), ('used', 'filesystem', ' % full'),
               ('lfs_used', 'Lustre', ' % full'), ('other_jobs', 'other jobs', ''))


def state_text(before, after):
    """'load 0.4 → 7.9, filesystem 41 → 97 % full, other jobs 0 → 12' (what was recorded)."""
    parts = []
    for key, label, unit in STATE_LABEL:
        if key in after or key in before:
            old = before.get(key, '?')
            new = after.get(key, '?')
            parts.append(f'{label} {old}{unit}' if old == new else f'{label} {old} → {new}{unit}')
    fs_before, fs_after = before.get('fs') or {}, after.get('fs') or {}
    for name in sorted(set(fs_before) | set(fs_after)):     # the file system's own telemetry
        old, new = fs_before.get(name, '?'), fs_after.get(name, '?')
        parts.append(f'{name} {old}' if old == new else f'{name} {old} → {new}')
    return ', '.join(parts)
