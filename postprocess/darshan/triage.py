"""Why did a run get slower? The Darshan counters that changed most between two runs.

``diff_facts(a, b)`` compares two ``darshan_facts.log_facts`` results (restricted to the data
files when iobench's result.json lies beside each log, since the two runs wrote different paths)
and returns the changes ranked by size, each tagged with its module and kind: collective vs
independent operations, sync counts, request-size histograms, bytes per rank, Lustre layout,
slowest-rank time, bandwidth. ``render_text`` and ``render_html`` show them.

Ranking: a relative change |b - a| / min(|a|, |b|) (floored at 1/1000 of the larger value, so a
counter appearing from zero ranks on top), and any change of a text value (layout, version) counts
as large.
"""
BIG = 1000.0
KIND_ORDER = ('collective vs independent', 'sync', 'Lustre layout', 'slowest-rank time', 'bandwidth',
              'bytes', 'bytes per rank', 'request size histogram', 'operations', 'time (sum over ranks)',
              'run')


def flatten(facts):
    """{(module, kind, counter): value} of the facts worth comparing."""
    out = {}
    if not facts:
        return out
    out[('job', 'run', 'nprocs')] = facts.get('nprocs')
    out[('job', 'run', 'darshan version')] = facts.get('darshan_version')
    out[('job', 'run', 'modules')] = ','.join(sorted(facts.get('modules') or []))
    p = facts.get('posix') or {}
    for k in ('bytes_written', 'bytes_read'):
        out[('POSIX', 'bytes', 'POSIX_' + k.upper())] = p.get(k)
    for k in ('writes', 'reads', 'opens', 'seeks', 'stats'):
        out[('POSIX', 'operations', 'POSIX_' + k.upper())] = p.get(k)
    for k in ('fsyncs', 'fdsyncs'):
        out[('POSIX', 'sync', 'POSIX_' + k.upper())] = p.get(k)
    for k in ('write_time_s', 'read_time_s', 'meta_time_s'):
        out[('POSIX', 'time (sum over ranks)', 'POSIX_F_' + k[:-2].upper())] = p.get(k)
    for k in ('slowest_rank_write_s', 'slowest_rank_read_s'):
        if k in p:
            out[('POSIX', 'slowest-rank time', k)] = p[k]
    d = p.get('derived') or {}
    if d:
        out[('POSIX', 'slowest-rank time', 'slowest rank I/O time (s)')] = d.get('slowest_rank_io_time_s')
        out[('POSIX', 'bandwidth', 'aggregate MiB/s (by slowest rank)')] = d.get('agg_perf_MiBps')
    for op in ('write', 'read'):
        for b, n in (p.get(f'size_{op}_hist') or {}).items():
            out[('POSIX', 'request size histogram', f'POSIX_SIZE_{op.upper()}_{b}')] = n
    for r, n in (p.get('bytes_by_rank') or {}).items():
        out[('POSIX', 'bytes per rank', f'rank {r}')] = n
    m = facts.get('mpiio') or {}
    for k in ('coll_writes', 'indep_writes', 'coll_reads', 'indep_reads', 'nb_writes', 'nb_reads',
              'split_writes', 'split_reads', 'coll_opens', 'indep_opens'):
        if m:
            out[('MPI-IO', 'collective vs independent', 'MPIIO_' + k.upper())] = m.get(k)
    if m:
        out[('MPI-IO', 'sync', 'MPIIO_SYNCS')] = m.get('syncs')
        out[('MPI-IO', 'operations', 'MPIIO_HINTS')] = m.get('hints')
        out[('MPI-IO', 'operations', 'MPIIO_VIEWS')] = m.get('views')
        out[('MPI-IO', 'bytes', 'MPIIO_BYTES_WRITTEN')] = m.get('bytes_written')
        out[('MPI-IO', 'bytes', 'MPIIO_BYTES_READ')] = m.get('bytes_read')
        for k in ('write_time_s', 'read_time_s', 'meta_time_s'):
            if k in m:      # facts cached before these were recorded lack them
                out[('MPI-IO', 'time (sum over ranks)', 'MPIIO_F_' + k[:-2].upper())] = m[k]
        md = m.get('derived') or {}
        if md:
            out[('MPI-IO', 'slowest-rank time', 'slowest rank I/O time (s)')] = md.get('slowest_rank_io_time_s')
        for op in ('write', 'read'):
            for b, n in (m.get(f'size_{op}_hist') or {}).items():
                out[('MPI-IO', 'request size histogram', f'MPIIO_SIZE_{op.upper()}_AGG_{b}')] = n
    if facts.get('h5f'):
        out[('H5F', 'sync', 'H5F_FLUSHES')] = facts['h5f'].get('flushes')
    h5d = facts.get('h5d') or {}
    if h5d:
        # dataset paths differ between runs (file names); compare by dataset name inside the file
        agg = {}
        for k in ('write_time_s', 'read_time_s', 'meta_time_s'):
            if any(k in v for v in h5d.values()):
                out[('H5D', 'time (sum over ranks)', 'H5D_F_' + k[:-2].upper())] = \
                    sum(v.get(k, 0.0) for v in h5d.values())
        for name, v in h5d.items():
            ds = name.rsplit(':', 1)[-1]
            a = agg.setdefault(ds, {'collective': 0, 'bytes': 0})
            a['collective'] += v.get('use_mpiio_collective', 0)
            a['bytes'] += v.get('bytes_written', 0) + v.get('bytes_read', 0)
        for ds, a in agg.items():
            out[('H5D', 'collective vs independent', f'{ds} H5D_USE_MPIIO_COLLECTIVE')] = a['collective']
            out[('H5D', 'bytes', f'{ds} bytes')] = a['bytes']
    layouts = sorted({f'count={c["stripe_count"]} size={c["stripe_size"]}'
                      for comps in (facts.get('lustre') or {}).values() for c in comps})
    out[('LUSTRE', 'Lustre layout', 'stripe layouts of the data files')] = '; '.join(layouts) or 'none'
    return out


def _score(a, b):
    if a == b:
        return 0.0
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or a is None or b is None:
        return BIG
    big = max(abs(a), abs(b))
    floor = max(min(abs(a), abs(b)), big / BIG)
    return min(BIG, abs(b - a) / floor) if floor > 0 else 0.0


def diff_facts(a, b):
    """Changed values, biggest first: [{'module', 'kind', 'counter', 'a', 'b', 'score'}]."""
    fa, fb = flatten(a), flatten(b)
    changes = []
    for key in sorted(set(fa) | set(fb), key=lambda k: (k[0], k[1], k[2])):
        va, vb = fa.get(key), fb.get(key)
        s = _score(va, vb)
        if s > 0:
            changes.append({'module': key[0], 'kind': key[1], 'counter': key[2], 'a': va, 'b': vb,
                            'score': s})
    changes.sort(key=lambda c: (-c['score'], KIND_ORDER.index(c['kind']) if c['kind'] in KIND_ORDER else 99))
    return changes


def _fmt(v):
    if v is None:
        return '-'
    if isinstance(v, float):
        return f'{v:.6g}'
    return str(v)


def _change(c):
    a, b = c['a'], c['b']
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a is not None and b is not None:
        if a == 0:
            return 'new' if b else '='
        return f'{(b - a) / abs(a) * 100:+.1f}%'
    return 'changed'


def render_text(changes, name_a, name_b, top=40):
    lines = [f'A: {name_a}', f'B: {name_b}']
    if not changes:
        return '\n'.join(lines + ['no counter changed'])
    w = max(len(c['counter']) for c in changes[:top])
    lines.append(f'{"module":7} {"kind":26} {"counter":{w}} {"A":>14} {"B":>14}  change')
    for c in changes[:top]:
        lines.append(f'{c["module"]:7} {c["kind"]:26} {c["counter"]:{w}} {_fmt(c["a"]):>14} '
                     f'{_fmt(c["b"]):>14}  {_change(c)}')
    if len(changes) > top:
        lines.append(f'... {len(changes) - top} smaller changes (see the HTML or --top)')
    return '\n'.join(lines)


def render_html(changes, name_a, name_b):
    """The diff as a page (templates/diff.html, autoescaped)."""
    from postprocess.darshan import page as darshan_page
    by_kind = {}
    for c in changes:
        by_kind.setdefault(c['kind'], []).append(c)
    kinds = [{'kind': k, 'n': len(v), 'counter': v[0]['counter'], 'a': _fmt(v[0]['a']), 'b': _fmt(v[0]['b'])}
             for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1][0]['score'])]
    shown = [dict(c, a=_fmt(c['a']), b=_fmt(c['b']), change=_change(c)) for c in changes]
    return darshan_page.render('diff.html', changes=shown, kinds=kinds, name_a=name_a, name_b=name_b)


def diff_logs(log_a, log_b):
    """Open both logs (restricted to iobench's data files where a result.json lies beside them)."""
    from contract import darshan_facts
    from postprocess.darshan.results import result_beside
    facts = []
    for log in (log_a, log_b):
        report = darshan_facts.open_log(log)
        res = result_beside(log)
        files = darshan_facts.files_from_result(res) if res else None
        facts.append(darshan_facts.log_facts(report, files))
    return diff_facts(*facts)

