"""Read a Darshan log with PyDarshan and boil it down to the facts ioregress checks and shows.

Everything comes from PyDarshan (``darshan.DarshanReport(path, read_all=True)``, ``to_df()``,
``accumulate_records`` for the derived metrics Darshan itself computes); nothing parses the log
format by hand but the header's region map (``_cut_short``: darshan-util crashes on a cut log
before it can say so). ``log_facts`` returns plain JSON-able data so it can be cached and compared.

Which records count: the data files iobench reports in its result JSON, matched by exact path
(a directory entry, e.g. an ADIOS2 ``.bp`` directory, also matches the files under it). OpenMPI's
``<file>.locktest.<rank>`` and shared-memory ``*.sm`` files, the standard streams and heatmap
pseudo-records are never data. Without a list of data files every remaining record counts.
"""
import contextlib
import gc
import os
import re
import struct
import tempfile

SIZE_BINS = ('0_100', '100_1K', '1K_10K', '10K_100K', '100K_1M', '1M_4M', '4M_10M',
             '10M_100M', '100M_1G', '1G_PLUS')
_NOT_DATA = re.compile(r'(\.locktest(\.\d+)?$|_cid-[-\d]+\.sm$|^<(STDIN|STDOUT|STDERR)>$|^heatmap:)')
#: darshan-runtime's built-in path exclusions (darshan-config.c, 3.x): files under them get no record.
DEFAULT_EXCLUDE_DIRS = ('/etc/', '/dev/', '/usr/', '/bin/', '/boot/', '/lib/', '/opt/', '/sbin/',
                        '/sys/', '/proc/', '/var/')


# Where the header's region map (name map, then one (offset, length) per module, uint64 each) starts
# and how many entries it has, per log format version (darshan-log-format.h: 3.41 has a 64-bit
# partial flag and 64 modules, 3.10-3.21 a 32-bit one and 16). Other versions: not checked here.
_REGION_MAP = {'3.41': (32, 65), '3.21': (24, 17), '3.10': (24, 17)}
_MAGIC_NR = 6567223


class DarshanLogError(Exception):
    """The log cannot be used: unreadable, truncated, corrupt, or not the kind of log expected."""


@contextlib.contextmanager
def _captured_c_stderr():
    """darshan-util reports damaged logs on the C stderr and carries on; capture those lines."""
    lines = []
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode='w+b') as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().decode('utf-8', 'replace').splitlines())


def open_log(path):
    """DarshanReport of ``path`` with every module read, or DarshanLogError with one clear line."""
    import darshan
    if not os.path.isfile(path):
        raise DarshanLogError(f'no such Darshan log: {path}')
    size = os.path.getsize(path)
    if size == 0:
        raise DarshanLogError(f'empty Darshan log (the run died before Darshan wrote it?): {path}')
    short = _cut_short(path, size)
    if short:
        raise DarshanLogError(f'truncated or corrupt Darshan log (cut short: {short}): {path}')
    with _captured_c_stderr() as errors:
        try:
            report = darshan.DarshanReport(path, read_all=True)
        except Exception as err:  # PyDarshan raises RuntimeError/ValueError/KeyError on bad logs
            report, exc = None, str(err)
        if report is None:
            gc.collect()  # the half-built report closes its handle now, its complaint captured
    if report is None:
        raise DarshanLogError(f'not a readable Darshan log ({exc}): {path}')
    damage = [e.removeprefix('Error: ').strip().rstrip('.') for e in errors if e.startswith('Error')]
    if damage:
        # never closed: darshan-util asserts on a damaged log's handle (`state` in
        # darshan_log_close) and aborts the process -- a nightly's post-processing with it
        report.log = None
        raise DarshanLogError(f'truncated or corrupt Darshan log ({"; ".join(damage[:2])}): {path}')
    # closed at once (every record is read into memory): a report left to the garbage collector
    # closes its C handle from __del__, which can run inside cffi's lock while the next report
    # parses a type -- a deadlock that hung a nightly's ReFrame after its checks
    # (tests/test_why_e2e.py, night 7)
    report.__exit__(None, None, None)
    return report


def _cut_short(path, size):
    """Why the log ends before its own regions do ('2011 of 4521 bytes'), or None. darshan-util
    segfaults on some logs cut inside a compressed region (seen at 1400-1800 bytes of 2.4-4.5 KB
    logs): no Python error to catch, the whole nightly's post-processing dies. The header is
    stored uncompressed; its region map says where the log must end."""
    with open(path, 'rb') as fp:
        head = fp.read(1400)
    layout = _REGION_MAP.get(head[:8].rstrip(b'\0').decode('ascii', 'replace'))
    if layout is None or (len(head) >= 16 and struct.unpack_from('<q', head, 8)[0] != _MAGIC_NR):
        return None             # another version or byte order: darshan-util's own checks
    base, count = layout
    if size < base + 16 * count:
        return f'{size} bytes, its header alone is {base + 16 * count}'
    end = max(off + length for off, length in
              (struct.unpack_from('<QQ', head, base + 16 * i) for i in range(count)))
    return f'{size} of {end} bytes' if size < end else None


def _normpaths(paths):
    out = set()
    for p in paths or ():
        out.add(os.path.normpath(p))
        out.add(os.path.normpath(os.path.realpath(p)))
    return out


def is_data_name(name, data_files=None):
    """True when a record name is one of the data files (or under one of them, for directories)."""
    if not name or _NOT_DATA.search(name):
        return False
    if data_files is None:
        return True
    path = name.split(':', 1)[0] if ':/' in name else name  # H5D names are "<file>:/<dataset>"
    norm = os.path.normpath(path)
    return norm in data_files or any(norm.startswith(d + '/') for d in data_files)


def _frames(report, module):
    if module not in report.records or len(report.records[module]) == 0:
        return None
    return report.records[module].to_df()


def _mask(df, names, data_files):
    return df['id'].map(lambda i: is_data_name(names.get(i), data_files)).values


def _select(df, names, data_files):
    return df[_mask(df, names, data_files)]


def _sum(df, column):
    return int(df[column].clip(lower=0).sum()) if df is not None and column in df else 0


def _fsum(df, column):
    return float(df[column].clip(lower=0).sum()) if df is not None and column in df else 0.0


def _derived(frames, ids, module, nprocs):
    """Darshan's own derived metrics (slowest-rank time, aggregate MiB/s) over the given records."""
    from darshan.backend.cffi_backend import accumulate_records
    sub = {k: v[v['id'].isin(ids)] for k, v in frames.items()}
    if len(sub['counters']) == 0:
        return None
    acc = accumulate_records(sub, module, nprocs)
    dm = acc.derived_metrics
    return {'total_bytes': int(dm.total_bytes), 'slowest_rank_io_time_s': float(dm.agg_time_by_slowest),
            'agg_perf_MiBps': float(dm.agg_perf_by_slowest)}


def _posix_facts(report, names, data_files, nprocs):
    frames = _frames(report, 'POSIX')
    if frames is None:
        return None
    keep = _mask(frames['counters'], names, data_files)
    c, f = frames['counters'][keep], frames['fcounters'][keep]
    facts = {k.lower(): _sum(c, 'POSIX_' + k) for k in (
        'BYTES_WRITTEN', 'BYTES_READ', 'WRITES', 'READS', 'OPENS', 'FSYNCS', 'FDSYNCS', 'SEEKS', 'STATS')}
    facts.update({k.lower() + '_s': _fsum(f, 'POSIX_F_' + k) for k in ('WRITE_TIME', 'READ_TIME', 'META_TIME')})
    facts['size_write_hist'] = {b: _sum(c, 'POSIX_SIZE_WRITE_' + b) for b in SIZE_BINS}
    facts['size_read_hist'] = {b: _sum(c, 'POSIX_SIZE_READ_' + b) for b in SIZE_BINS}
    facts['files'] = sorted({names.get(i, str(i)) for i in c['id']})
    per_rank = c[c['rank'] >= 0]
    facts['shared_records_reduced'] = bool((c['rank'] < 0).any())
    facts['bytes_by_rank'] = {str(int(r)): int(g['POSIX_BYTES_WRITTEN'].clip(lower=0).sum()
                                               + g['POSIX_BYTES_READ'].clip(lower=0).sum())
                              for r, g in per_rank.groupby('rank')}
    if len(per_rank):
        fr = f[(c['rank'] >= 0).values]
        facts['slowest_rank_write_s'] = float(fr.groupby('rank')['POSIX_F_WRITE_TIME'].sum().max())
        facts['slowest_rank_read_s'] = float(fr.groupby('rank')['POSIX_F_READ_TIME'].sum().max())
    facts['derived'] = _derived(frames, set(c['id']), 'POSIX', nprocs)
    return facts


def _mpiio_facts(report, names, data_files, nprocs):
    frames = _frames(report, 'MPI-IO')
    if frames is None:
        return None
    c = _select(frames['counters'], names, data_files)
    facts = {k.lower(): _sum(c, 'MPIIO_' + k) for k in (
        'INDEP_OPENS', 'COLL_OPENS', 'INDEP_WRITES', 'COLL_WRITES', 'INDEP_READS', 'COLL_READS',
        'NB_WRITES', 'NB_READS', 'SPLIT_WRITES', 'SPLIT_READS', 'SYNCS', 'HINTS', 'VIEWS',
        'BYTES_WRITTEN', 'BYTES_READ')}
    f = frames['fcounters'][frames['fcounters']['id'].isin(set(c['id']))]
    facts.update({k.lower() + '_s': _fsum(f, 'MPIIO_F_' + k) for k in ('WRITE_TIME', 'READ_TIME', 'META_TIME')})
    facts['size_write_hist'] = {b: _sum(c, 'MPIIO_SIZE_WRITE_AGG_' + b) for b in SIZE_BINS}
    facts['size_read_hist'] = {b: _sum(c, 'MPIIO_SIZE_READ_AGG_' + b) for b in SIZE_BINS}
    facts['files'] = sorted({names.get(i, str(i)) for i in c['id']})
    facts['derived'] = _derived(frames, set(c['id']), 'MPI-IO', nprocs)
    return facts


def _hdf5_facts(report, names, data_files):
    out = {}
    frames = _frames(report, 'H5F')
    if frames is not None:
        c = _select(frames['counters'], names, data_files)
        out['h5f'] = {'opens': _sum(c, 'H5F_OPENS'), 'flushes': _sum(c, 'H5F_FLUSHES'),
                      'use_mpiio': _sum(c, 'H5F_USE_MPIIO'),
                      'files': sorted({names.get(i, str(i)) for i in c['id']})}
    frames = _frames(report, 'H5D')
    if frames is not None:
        c = _select(frames['counters'], names, data_files)
        # per dataset and over its ranks' records, once (not a filter of the frame per dataset:
        # MDDatasets' logs hold thousands of datasets)
        f = frames['fcounters']
        cols = [k for k in ('H5D_F_WRITE_TIME', 'H5D_F_READ_TIME', 'H5D_F_META_TIME') if k in f]
        times = f[cols].clip(lower=0).groupby(f['id']).sum()
        counts = {'writes': 'H5D_WRITES', 'reads': 'H5D_READS', 'bytes_written': 'H5D_BYTES_WRITTEN',
                  'bytes_read': 'H5D_BYTES_READ', 'use_mpiio_collective': 'H5D_USE_MPIIO_COLLECTIVE',
                  'flushes': 'H5D_FLUSHES'}
        present = [k for k in counts.values() if k in c]
        table = c[present].clip(lower=0).groupby(c['id']).sum().join(times, how='left').fillna(0.0)
        datasets = {}
        for i, row in zip(table.index, table.to_dict('records')):
            datasets[names.get(i, str(i))] = {
                'write_time_s': float(row.get('H5D_F_WRITE_TIME', 0.0)),
                'read_time_s': float(row.get('H5D_F_READ_TIME', 0.0)),
                'meta_time_s': float(row.get('H5D_F_META_TIME', 0.0)),
                **{key: int(row.get(col, 0)) for key, col in counts.items()}}
        out['h5d'] = datasets
    return out


def lustre_layouts(report, names=None, data_files=None):
    """Stripe layout per file from LUSTRE records, whatever the PyDarshan/log version.

    Three shapes exist: PyDarshan >= 3.4.6 gives a 'components' frame (LUSTRE_COMP_STRIPE_SIZE/
    _COUNT, one row per component); older PyDarshan a 'counters' frame with LUSTRE_STRIPE_SIZE and
    LUSTRE_STRIPE_WIDTH; darshan-parser style flat columns are LUSTRE_COMP<k>_STRIPE_SIZE/_COUNT.
    Returns {file: [{'stripe_size': int, 'stripe_count': int}, ...]} (one entry per component).
    """
    names = names if names is not None else report.name_records
    frames = _frames(report, 'LUSTRE')
    return layouts_from_frames(frames, names, data_files) if frames is not None else {}


def layouts_from_frames(frames, names, data_files=None):
    out = {}

    def add(i, size, count):
        name = names.get(i, str(i))
        if is_data_name(name, data_files):
            comps = out.setdefault(name, [])
            entry = {'stripe_size': int(size), 'stripe_count': int(count)}
            if entry not in comps:
                comps.append(entry)

    if 'components' in frames:
        for _, row in frames['components'].iterrows():
            add(row['id'], row['LUSTRE_COMP_STRIPE_SIZE'], row['LUSTRE_COMP_STRIPE_COUNT'])
    elif 'counters' in frames:
        df = frames['counters']
        if 'LUSTRE_STRIPE_SIZE' in df:
            for _, row in df.iterrows():
                add(row['id'], row['LUSTRE_STRIPE_SIZE'], row['LUSTRE_STRIPE_WIDTH'])
        else:
            comp = sorted({int(m.group(1)) for m in map(re.compile(r'LUSTRE_COMP(\d+)_STRIPE_SIZE').match,
                                                        df.columns) if m})
            for _, row in df.iterrows():
                for k in comp:
                    size, count = row[f'LUSTRE_COMP{k}_STRIPE_SIZE'], row[f'LUSTRE_COMP{k}_STRIPE_COUNT']
                    if size > 0 and count != 0:
                        add(row['id'], size, count)
    return out


def log_facts(report, data_files=None):
    """Plain-data summary of one log, restricted to ``data_files`` (None: all non-system records)."""
    job = report.metadata['job']
    nprocs = int(job['nprocs'])
    names = report.name_records
    wanted = _normpaths(data_files) if data_files is not None else None
    modules = list(report.modules)
    facts = {
        'nprocs': nprocs, 'exe': report.metadata.get('exe', ''), 'jobid': job.get('jobid'),
        'start_time': int(job['start_time_sec']), 'run_time_s': float(job.get('run_time') or 0),
        'log_version': job.get('log_ver'), 'darshan_version': job.get('metadata', {}).get('lib_ver'),
        'modules': modules,
        'partial_modules': [m for m, d in report.modules.items() if d.get('partial_flag')],
        'data_files_expected': sorted(data_files) if data_files is not None else None,
        'posix': _posix_facts(report, names, wanted, nprocs),
        'mpiio': _mpiio_facts(report, names, wanted, nprocs),
        'lustre': lustre_layouts(report, names, wanted),
        'dxt_records': sum(len(report.records[m]) for m in ('DXT_POSIX', 'DXT_MPIIO') if m in report.records),
    }
    facts.update(_hdf5_facts(report, names, wanted))
    facts['non_mpi'] = nprocs == 1 and 'MPI-IO' not in modules
    facts['kind'] = run_kind(facts)
    return facts


def run_kind(facts):
    """One-line verdict on what the log can tell, or why it cannot be used for iobench checks."""
    if facts['non_mpi']:
        return 'non-MPI run (1 process, no MPI-IO module): not an iobench MPI run'
    if 'POSIX' not in facts['modules']:
        return 'no POSIX module in this log (POSIX not instrumented or disabled): bytes cannot be checked'
    if facts['partial_modules']:
        return ('Darshan ran out of record memory for ' + ', '.join(facts['partial_modules'])
                + ': counters are incomplete')
    return 'ok'


def files_from_result(result):
    """Data file paths iobench reports (every repetition), from its result JSON document."""
    files = []
    for rep in result.get('repetitions') or ():
        files += rep.get('files') or ()
    return files
