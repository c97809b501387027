"""TOKIO-ABC (../shared/data/tokio-abc) as ioregress perflog lines.

The rows the paper kept (NERSC tokio-abcutils `load_and_synthesize_csv` and
`sc18paper.build_sc18_filters`): 2017-02-14 .. 2018-02-15, more than 1 GiB moved, no Cori Haswell
jobs, no `hacc_io_write_shared_write`. A platform is a file system (the perflog's partition) of a
system (Cori's `cscratch`, Edison's `scratch1/2/3`); a benchmark id (`ior_fpp_write`, ...) is a
check whose one phase is its direction. One repetition a job: the bandwidth of the slowest rank
(`darshan_agg_perf_by_slowest_posix`, MiB/s) over the bytes Darshan counted. The file system's own
telemetry of that moment (server CPU load, fullness, the job's share of the traffic) goes into
the line's provenance as `machine.fs_telemetry`, shown beside a finding (postprocess/why).
"""
import csv
import datetime
import gzip
import json
import os

MiB, GiB = 2.0 ** 20, 2.0 ** 30
FILES = {'cori': 'cori-summaries_2017-02-14-2018-02-15.csv.gz',
         'edison': 'edison-summaries_2017-02-14-2018-02-15.csv.gz'}
START, END = datetime.datetime(2017, 2, 14), datetime.datetime(2018, 2, 15)
API = {'dbscan_read': 'mpiio', 'vpicio_uni': 'mpiio'}       # abcconfig.json app_api: else POSIX
CHECK = {'ior': 'IOR', 'hacc_io_write': 'HACC-IO', 'hacc_io_read': 'HACC-IO',
         'vpicio_uni': 'VPIC-IO', 'dbscan_read': 'BD-CATS'}
HEADER = ('job_completion_time|reframe version|name|system|partition|environ|iob_params|jobid|'
          'result|iob_reps|iob_provenance|write_bw_var=write_bw_value|write_bw_unit|write_bw_ref|'
          'write_bw_lower_thres|write_bw_upper_thres|read_bw_var=read_bw_value|read_bw_unit|'
          'read_bw_ref|read_bw_lower_thres|read_bw_upper_thres')
TELEMETRY = ('fs_ave_oss_cpu', 'fs_ave_mds_cpu', 'fshealth_ost_most_full_pct',
             'jobsdb_concurrent_jobs')


def _num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def rows(data_dir):
    """The kept rows as dicts: system, partition, bench, check, params, phase, time, bytes, MiB/s,
    telemetry."""
    for system, name in FILES.items():
        with gzip.open(os.path.join(data_dir, name), 'rt', newline='') as fh:
            reader = csv.reader(fh)
            header = next(reader)
            for fields in reader:
                # each data row opens with pandas' index, which the header does not name
                row = _row(system, dict(zip(header, fields[len(fields) - len(header):])))
                if row:
                    yield row


def _row(system, r):
    bw, nprocs, fs = (_num(r.get('darshan_agg_perf_by_slowest_posix')),
                      _num(r.get('darshan_nprocs')), r.get('_file_system'))
    gibs, start = _num(r.get('darshan_total_gibs_posix')), _num(r.get('_datetime_start'))
    if not (bw and bw > 0 and nprocs and fs and gibs and start):
        return None
    when = datetime.datetime.utcfromtimestamp(start)
    if system == 'cori' and nprocs <= 1024:
        return None                             # Cori Haswell: a tiny part of the system
    if not (START <= when < END) or gibs <= 1.0:
        return None
    writes = (_num(r.get('darshan_biggest_write_api_bytes')) or 0) > \
        (_num(r.get('darshan_biggest_read_api_bytes')) or 0)
    files = _num(r.get('darshan_biggest_write_api_files' if writes else
                       'darshan_biggest_read_api_files')) or 0
    fpp = files > 0 and abs((files % nprocs) / files) < 0.05
    app = os.path.basename(r.get('darshan_app', ''))
    layout, phase = ('fpp' if fpp else 'shared'), ('write' if writes else 'read')
    bench = f'{app}_{layout}_{phase}'
    if bench == 'hacc_io_write_shared_write' or app not in CHECK:
        return None
    state = {k: _num(r.get(k)) for k in TELEMETRY if _num(r.get(k)) is not None}
    cf = _num(r.get('darshan_tot_bytes_written_posix' if writes else 'darshan_tot_bytes_read_posix'))
    fs_bytes = _num(r.get('fs_tot_bytes_written' if writes else 'fs_tot_bytes_read'))
    if cf and fs_bytes:
        state['job_share_of_fs_bytes'] = round(cf / fs_bytes, 3)
    return {'system': system, 'partition': fs, 'bench': bench, 'check': CHECK[app],
            'params': f'backend={API.get(app, "posix")},bench={bench},mode={layout}',
            'phase': phase, 'time': when, 'bytes': gibs * GiB, 'bw': bw,
            'jobid': r.get('_jobid') or r.get('darshan_jobid') or '', 'state': state}


def line(row):
    """One perflog line (docs/CONTRACT.md section 3) for a kept row."""
    bw = float(row['bw'])
    seconds = float(row['bytes']) / (bw * MiB)
    reps = f"{row['phase']}={int(row['bytes'])}:{seconds!r}"
    prov = json.dumps({'source': 'tokio-abc', 'machine': {'fs_telemetry': row['state']}},
                      separators=(',', ':'))
    w = f"write_bw={bw!r}" if row['phase'] == 'write' else 'write_bw=None'
    r = f"read_bw={bw!r}" if row['phase'] == 'read' else 'read_bw=None'
    stamp = (row['time'] + datetime.timedelta(seconds=seconds)).strftime('%Y-%m-%dT%H:%M:%S+0000')
    return '|'.join([stamp, 'reframe 4.10.4', f"{row['check']} %bench={row['bench']}",
                     row['system'], row['partition'], 'abc', row['params'], str(row['jobid']),
                     'pass', reps, prov, w, 'MiB/s', '0', 'None', 'None',
                     r, 'MiB/s', '0', 'None', 'None'])


def write_perflogs(data_dir, out_dir):
    """Write every kept row as a perflog line under OUT/perflogs/<system>/<fs>/<check>.log, in
    time order; returns the perflog directory and how many lines."""
    root = os.path.join(out_dir, 'perflogs')
    by_file = {}
    for row in rows(data_dir):
        by_file.setdefault((row['system'], row['partition'], row['check']), []).append(row)
    n = 0
    for (system, fs, check), lst in sorted(by_file.items()):
        path = os.path.join(root, system, fs, f'{check}.log')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lst.sort(key=lambda r: r['time'])
        with open(path, 'w', encoding='utf-8') as fh:
            fh.write(HEADER + '\n')
            for row in lst:
                fh.write(line(row) + '\n')
                n += 1
    return root, n
