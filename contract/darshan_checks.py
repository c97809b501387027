"""Assertions that a Darshan log agrees with what iobench says it did (pure functions).

``check_run(facts, result)`` takes ``darshan_facts.log_facts(report, files_from_result(result))``
and iobench's result JSON (docs/CONTRACT.md section 2) and returns verdicts, each
``{'check': name, 'ok': bool, 'detail': one line}``. The ReFrame mixin
(reframe_checks/iobench_lib/darshan.py) turns failed verdicts into sanity failures; the index shows
them per run.

Byte tolerance (Darshan's POSIX bytes on the data files vs the payload iobench reports): the
payload is a lower bound, always; what a library may add on top differs per backend:

- posix, mpiio: 0 — iobench's own pwrite()s, or ROMIO/OMPIO moving exactly the payload (two-phase
  aggregation reshuffles bytes between ranks, it does not add any). ROMIO data sieving on
  non-contiguous independent access rewrites holes and would exceed this: that is worth a failure
  (disable it with --hint romio_ds_write=disable, or raise ``darshan_bytes_tolerance``).
- hdf5: 2 % + 64 KiB per file + 4 KiB per dataset — superblock, object headers, B-tree and heap
  (measured with HDF5 1.10.8: 1496 bytes for one 4 MiB dataset; the metadata pattern's 1000 tiny
  datasets with attributes cost ~400 B each written and ~1.4 KiB each read back).
- adios2: 5 % + 1 MiB per data path — BP5/BP4 metadata files (md.*, mmd.*) and index padding.
- sionlib: 1 MiB per file — SIONlib's metadata blocks 1 and 2 (chunk padding is a hole, not written).
"""
from contract.darshan_facts import DEFAULT_EXCLUDE_DIRS
from contract.perflog import PHASES

PER_DATASET = {'hdf5': 4 << 10}  # metadata allowance per dataset a repetition reports
TOLERANCE = {  # backend -> (relative, absolute bytes per data path)
    'posix': (0.0, 0),
    'mpiio': (0.0, 0),
    'hdf5': (0.02, 64 << 10),
    'adios2': (0.05, 1 << 20),
    'sionlib': (0.0, 1 << 20),
}


def _verdict(check, ok, detail):
    return {'check': check, 'ok': bool(ok), 'detail': detail}


def payload(result, phase):
    """Bytes iobench moved in ``phase`` over all repetitions (0 when the phase did not run)."""
    return sum(int((rep.get(phase) or {}).get('bytes') or 0) for rep in result.get('repetitions') or ())


def byte_bounds(result, phase, tolerance=None):
    """(low, high) bytes Darshan may see on the data files for ``phase``."""
    rel, per_path = tolerance if tolerance is not None else TOLERANCE.get(result.get('backend'), (0.0, 0))
    low = payload(result, phase)
    reps = result.get('repetitions') or ()
    npaths = sum(len(rep.get('files') or ()) for rep in reps)
    ndatasets = sum(int((rep.get('metadata') or {}).get('datasets') or 0) for rep in reps)
    slack = per_path * npaths + PER_DATASET.get(result.get('backend'), 0) * ndatasets
    return low, int(low * (1 + rel)) + slack


def _check_bytes(facts, result, tolerance):
    out = []
    posix = facts.get('posix') or {}
    for phase, key in (('write', 'bytes_written'), ('read', 'bytes_read')):
        low, high = byte_bounds(result, phase, tolerance)
        seen = int(posix.get(key, 0))
        ok = low <= seen <= high
        out.append(_verdict(f'posix_bytes_{phase}', ok,
                            f'POSIX {key} on data files {seen} B, iobench {phase} payload {low} B, '
                            f'allowed [{low}, {high}]'))
    return out


def _check_records(facts, result):
    expected = sorted(set(f for rep in result.get('repetitions') or () for f in rep.get('files') or ()))
    seen = (facts.get('posix') or {}).get('files') or []
    missing = [f for f in expected if not any(s == f or s.startswith(f.rstrip('/') + '/') for s in seen)]
    if not expected:
        return _verdict('data_records', False, 'iobench result lists no data files to match')
    if missing:
        return _verdict('data_records', False,
                        f'no POSIX record for {len(missing)} data file(s), e.g. {missing[0]} (Darshan skips '
                        f'{" ".join(DEFAULT_EXCLUDE_DIRS)} unless DARSHAN_EXCLUDE_DIRS says otherwise)')
    return _verdict('data_records', True, f'{len(expected)} data file(s) matched by exact path')


def _phases(result):
    return [p for p in PHASES if payload(result, p) > 0]


def coll_metadata(result):
    """True when the run asked HDF5 for collective metadata operations."""
    if str((result.get('params') or {}).get('coll_metadata', '0')).lower() in ('1', 'true', 'yes', 'on'):
        return True
    return any((rep.get('metadata') or {}).get(k) for rep in result.get('repetitions') or ()
               for k in ('coll_metadata_write', 'all_coll_metadata_ops'))


def _check_collective(facts, result):
    backend, mode = result.get('backend'), result.get('mode')
    if backend not in ('mpiio', 'hdf5') or mode not in ('collective', 'independent'):
        return []
    m = facts.get('mpiio')
    if 'MPI-IO' in facts.get('partial_modules', ()):
        return [_verdict('mpiio_mode', True, 'not checked: Darshan ran out of MPI-IO record memory')]
    if not m:
        return [_verdict('mpiio_mode', False, f'{backend} {mode} run but no MPI-IO records on the data files')]
    out = []
    for phase in _phases(result):
        op = 'WRITES' if phase == 'write' else 'READS'
        coll, indep = m[f'coll_{op.lower()}'], m[f'indep_{op.lower()}']
        counts = f'MPIIO_COLL_{op}={coll} MPIIO_INDEP_{op}={indep}'
        if mode == 'collective':
            # HDF5 writes its metadata independently unless collective metadata writes are on.
            ok = coll > 0 and (indep == 0 or backend == 'hdf5')
        elif backend == 'hdf5' and coll_metadata(result):
            # collective metadata I/O in an independent-data run: the data mode is checked by H5D
            ok = indep > 0
            counts += ' (collective metadata requested)'
        else:
            ok = coll == 0 and (indep > 0 or m[f'nb_{op.lower()}'] > 0)
        out.append(_verdict(f'mpiio_{mode}_{phase}', ok, f'{mode} {phase}: {counts}'))
    return out


def expected_datasets(result, rep):
    """(names, count) of HDF5 datasets one repetition's file must hold (either may be None).

    The result JSON does not list datasets, so this follows the patterns: per-repetition metadata
    'datasets' (mddatasets) is a count; hacc's 'individual' layout stores each variable as its own
    dataset, its other layouts one; anything else at least one dataset per file.
    """
    count = (rep.get('metadata') or {}).get('datasets')
    if count:
        return None, int(count)
    if result.get('pattern') == 'hacc':
        if (result.get('params') or {}).get('layout', result.get('layout', 'individual')) == 'individual':
            return [v['name'] if isinstance(v, dict) else str(v) for v in result.get('variables') or ()], None
    return None, 1


def _check_hdf5(facts, result):
    if result.get('backend') != 'hdf5':
        return []
    if 'H5D' in facts.get('partial_modules', ()):
        return [_verdict('h5d_datasets', True, 'not checked: Darshan ran out of H5D record memory '
                         '(raise DARSHAN_MODMEM)')]
    datasets = facts.get('h5d') or {}
    missing, nfiles = [], 0
    for rep in result.get('repetitions') or ():
        for f in rep.get('files') or ():
            nfiles += 1
            mine = [d for d in datasets if d.split(':', 1)[0] == f]
            names, count = expected_datasets(result, rep)
            if names:
                missing += [f'{f}:/{n}' for n in names if f'{f}:/{n}' not in mine]
            elif len(mine) < count:
                missing.append(f'{f}: {len(mine)} of {count} datasets')
    out = [_verdict('h5d_datasets', not missing and nfiles > 0,
                    f'missing H5D records: {", ".join(missing[:3])}' if missing else
                    f'{len(datasets)} H5D record(s), e.g. {", ".join(sorted(datasets)[:2])}')]
    mode = result.get('mode')
    if mode in ('collective', 'independent') and datasets:
        flags = {d: v['use_mpiio_collective'] for d, v in datasets.items()}
        ok = all(flags.values()) if mode == 'collective' else not any(flags.values())
        out.append(_verdict('h5d_transfer_mode', ok, f'{mode} run: H5D_USE_MPIIO_COLLECTIVE per dataset '
                            + ', '.join(f'{d.rsplit(":", 1)[-1]}={v}' for d, v in sorted(flags.items())[:4])))
    return out


def _check_sync(facts, result):
    if payload(result, 'write') == 0:
        return []
    method = result.get('sync_method') or ''
    out = []
    posix, mpiio, h5f = facts.get('posix') or {}, facts.get('mpiio') or {}, facts.get('h5f') or {}
    if 'fsync' in method or 'fdatasync' in method:
        n = posix.get('fsyncs', 0) + posix.get('fdsyncs', 0)
        out.append(_verdict('posix_sync', n > 0, f'sync method "{method}": POSIX_FSYNCS+POSIX_FDSYNCS={n}'))
    if 'MPI_File_sync' in method:
        n = mpiio.get('syncs', 0)
        out.append(_verdict('mpiio_sync', n > 0, f'sync method "{method}": MPIIO_SYNCS={n}'))
    if 'H5Fflush' in method and 'h5f' in facts:
        n = h5f.get('flushes', 0)
        out.append(_verdict('h5f_flush', n > 0, f'sync method "{method}": H5F_FLUSHES={n}'))
    if not out:
        out.append(_verdict('sync', False, f'unknown sync method "{method}": cannot check it'))
    return out


def check_stripe(facts, count, size):
    """Every data file's first Lustre component has the requested stripe (count -1 = all OSTs)."""
    layouts = facts.get('lustre') or {}
    if not layouts:
        return _verdict('lustre_stripe', False, 'stripe requested but the log has no LUSTRE records for the '
                        'data files (darshan-runtime built without the Lustre module?)')
    bad = {f: c[0] for f, c in layouts.items()
           if c[0]['stripe_size'] != int(size) or (int(count) != -1 and c[0]['stripe_count'] != int(count))}
    first = next(iter(layouts.values()))[0]
    if bad:
        f, c = next(iter(bad.items()))
        return _verdict('lustre_stripe', False, f'{len(bad)} file(s) not striped as requested '
                        f'(count {count}, size {size}): {f} has count {c["stripe_count"]} size {c["stripe_size"]}')
    return _verdict('lustre_stripe', True, f'{len(layouts)} file(s) striped count {first["stripe_count"]} '
                    f'size {first["stripe_size"]}')


def check_run(facts, result, tolerance=None, stripe=None):
    """All verdicts for one iobench run. ``stripe``: None or (count, size_bytes) requested."""
    # a 1-rank run through POSIX leaves the same traces as a non-MPI program: trust the result then
    single_rank = facts['non_mpi'] and int(result.get('ranks') or 0) == 1
    if facts['kind'] != 'ok' and not facts['kind'].startswith('Darshan ran out') and not single_rank:
        return [_verdict('log_usable', False, facts['kind'])]
    if 'POSIX' in facts['partial_modules']:
        return [_verdict('log_usable', False, facts['kind'])]
    if facts['nprocs'] != int(result.get('ranks') or facts['nprocs']):
        return [_verdict('log_usable', False, f'log has {facts["nprocs"]} processes, iobench ran '
                         f'{result.get("ranks")} ranks: not this run\'s log')]
    out = [_check_records(facts, result)]
    out += _check_bytes(facts, result, tolerance)
    out += _check_collective(facts, result)
    out += _check_hdf5(facts, result)
    out += _check_sync(facts, result)
    if stripe is not None:
        out.append(check_stripe(facts, *stripe))
    return out


def failures(verdicts):
    return [v for v in verdicts if not v['ok']]


def perf_figures(facts):
    """Darshan's view of the run: slowest-rank I/O time (s) and aggregate MiB/s on the data files."""
    d = (facts.get('posix') or {}).get('derived') or {}
    return {'darshan_io_time': d.get('slowest_rank_io_time_s'), 'darshan_bw': d.get('agg_perf_MiBps')}


def format_verdicts(verdicts):
    return '\n'.join(f'{"PASS" if v["ok"] else "FAIL"} {v["check"]}: {v["detail"]}' for v in verdicts)
