"""postprocess/report/ior_ratio.py: iobench/IOR ratios from the two series of the IOR check."""
import datetime

from postprocess.history.store import History
from postprocess.report.ior_ratio import ior_ratios

MiB = 2 ** 20
T0 = datetime.datetime(2026, 11, 20, 2, 0, tzinfo=datetime.timezone.utc)


def run(tool, api, ranks, write_bw, read_bw, hours=0.0, check='IORCompare'):
    backend, mode = api.split(':')
    params = (f'backend={backend},block=64m,mode={mode},pattern=ior,ranks={ranks},segments=2,'
              f'size=64,stripe=default,tool={tool},transfer=1m')
    nbytes = 64 * MiB * 2 * ranks
    return {'time': T0 + datetime.timedelta(hours=hours, minutes=len(write_bw)), 'system': 'local',
            'partition': 'default', 'environ': 'mpi-gnu', 'check': f'{check} %tool={tool} %io={api}',
            'params': params, 'param_dict': {}, 'jobid': '1', 'result': 'pass', 'provenance': {},
            'perf': {}, 'session': None, 'source': 'test',
            'reps': {'write': [(nbytes, nbytes / bw / MiB) for bw in write_bw],
                     'read': [(nbytes, nbytes / bw / MiB) for bw in read_bw]}}


def test_paired_ratio_per_api_mode_size_and_finding_outside_band():
    runs = [run('iobench', 'posix:fpp', 2, [100, 200, 300], [100, 100, 100]),
            run('ior', 'posix:fpp', 2, [100, 200, 300], [80, 80, 80]),
            run('iobench', 'hdf5:collective', 1, [90, 80, 85], [100, 104, 96]),
            run('ior', 'hdf5:collective', 1, [100, 100, 100], [100, 100, 100])]
    rows = {(r['api'], r['mode'], r['ranks'], r['phase']): r for r in ior_ratios(History(runs))}
    assert set(rows) == {('posix', 'fpp', 2, 'write'), ('posix', 'fpp', 2, 'read'),
                         ('hdf5', 'collective', 1, 'write'), ('hdf5', 'collective', 1, 'read')}
    w = rows[('posix', 'fpp', 2, 'write')]
    assert w['ratio'] == 1.0 and w['paired'] and w['pairs'] == 3 and not w['finding']
    assert w['size'] == '64' and w['block'] == '64m' and w['transfer'] == '1m' and w['segments'] == '2'
    r = rows[('posix', 'fpp', 2, 'read')]
    assert abs(r['ratio'] - 1.25) < 1e-12 and r['finding']
    assert r['finding_text'] == ('posix/fpp read at 2 ranks, block 64m: iobench/IOR = 1.25, '
                                 'outside 0.90-1.10')
    h = rows[('hdf5', 'collective', 1, 'write')]
    assert abs(h['ratio'] - 0.85) < 1e-12 and h['finding'] and abs(h['iobench_MiBps'] - 85) < 1e-9
    assert not rows[('hdf5', 'collective', 1, 'read')]['finding']


def test_latest_common_session_unpaired_counts_and_lonely_series():
    runs = [run('iobench', 'mpiio:collective', 2, [50, 50, 50], [50, 50, 50]),
            run('ior', 'mpiio:collective', 2, [100, 100, 100], [100, 100, 100]),
            # a later night: iobench has 4 repetitions, IOR 3 -> ratio of medians
            run('iobench', 'mpiio:collective', 2, [100, 104, 96, 100], [100] * 4, hours=24),
            run('ior', 'mpiio:collective', 2, [100, 100, 100], [100] * 3, hours=24),
            run('iobench', 'posix:shared', 1, [10], [10]),            # no IOR series: skipped
            ]
    rows = ior_ratios(History(runs), low=0.95, high=1.05)
    assert [(r['api'], r['phase']) for r in rows] == [('mpiio', 'write'), ('mpiio', 'read')]
    assert rows[0]['night'] == '2026-11-21' and rows[0]['ratio'] == 1.0 and not rows[0]['paired']
    assert rows[0]['pairs'] == 3 and not rows[0]['finding']


def test_no_ior_series_gives_no_rows():
    assert ior_ratios(History([])) == []
    assert ior_ratios(History([run('iobench', 'posix:fpp', 1, [1], [1])])) == []
