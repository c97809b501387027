"""One measurement over several iobench processes (reframe_checks/iobench_lib/processes.py):
MDEmptyFiles runs 8 real iobench processes under ReFrame, each in its own run directory, and its
perflog line carries all their repetitions and commands; a lost process's document fails the
check by name; the merge itself on documents."""
import json
import pathlib

import pytest

from iobench_lib import processes
from tests.support.reframe_runs import reframe, report_cases

REPO = pathlib.Path(__file__).resolve().parents[1]


def doc(command, reps, status='ok'):
    return {'status': status, 'command': command, 'ranks': 2,
            'repetitions': [{'rep': i, 'write': {'total_s': 0.1 * (i + 1)}} for i in range(reps)]}


def test_merge_keeps_every_repetition_with_its_process():
    merged = processes.merge([doc('a', 2), doc('b', 3)])
    assert [r['rep'] for r in merged['repetitions']] == [0, 1, 2, 3, 4]
    assert [r['process'] for r in merged['repetitions']] == [0, 0, 1, 1, 1]
    assert merged['repetitions'][2]['write']['total_s'] == 0.1       # process 1's first, raw
    assert merged['processes'] == 2 and merged['commands'] == ['a', 'b']
    assert merged['command'] == 'a'


def test_merge_never_hides_a_missing_or_failed_process():
    failed = doc('b', 1, status='error')
    assert processes.merge([doc('a', 2), failed]) is failed
    assert processes.merge([doc('a', 2), None]) is None
    one = doc('a', 2)
    assert processes.merge([one]) is one                               # one process: as it was


def test_each_process_gets_its_own_directory_and_result_file():
    opts = ['--dir', '/s/run', '--repeat', '5', '--json', 'result.json']
    dirs = processes.run_dirs('/s/run', 3)
    assert dirs == ['/s/run', '/s/run.p1', '/s/run.p2']
    lines = processes.extra_launches('mpirun -np 2', 'env DARSHAN_LOGFILE=/st/x.darshan iobench',
                                     opts, dirs, darshan_log='/st/x.darshan')
    assert lines == [
        'mpirun -np 2 env DARSHAN_LOGFILE=/st/x.p1.darshan iobench --dir /s/run.p1 --repeat 5 '
        '--json result.p1.json',
        'mpirun -np 2 env DARSHAN_LOGFILE=/st/x.p2.darshan iobench --dir /s/run.p2 --repeat 5 '
        '--json result.p2.json']


def test_each_process_log_is_read_with_its_own_result(tmp_path):
    """iobench.pN.darshan is still a *.darshan log (what the index lists) and is joined with
    result.pN.json, not with the first process's result.json."""
    from postprocess.darshan.results import RESULT_SCHEMA, result_beside
    for i in range(3):
        (tmp_path / processes.json_name(i)).write_text(json.dumps({'schema': RESULT_SCHEMA, 'i': i}))
    logs = [tmp_path / processes.log_name('iobench.darshan', i) for i in range(3)]
    assert [p.name for p in logs] == ['iobench.darshan', 'iobench.p1.darshan', 'iobench.p2.darshan']
    assert [result_beside(str(p))['i'] for p in logs] == [0, 1, 2]


@pytest.mark.reframe
def test_md_empty_files_is_one_measurement_of_eight_processes(tmp_path):
    # the suite's check with 200 files per rank (its 5000 take 2 min here)
    proc = reframe(tmp_path / 'rf', '-c', str(REPO / 'tests' / 'reframe_checks' / 'md_small.py'),
                   '-r', '-n', 'MDEmptyFilesSmall')
    assert proc.returncode == 0, proc.output[-3000:]
    line = (tmp_path / 'rf' / 'perflogs' / 'local' / 'default' / 'MDEmptyFilesSmall.log').read_text()
    fields = line.splitlines()[-1].split('|')
    reps = dict(part.split('=', 1) for part in fields[9].split(';'))
    assert len(reps['write'].split(',')) == 8 * 5 and len(reps['read'].split(',')) == 8 * 5
    prov = json.loads(fields[10])
    assert prov['processes'] == 8 and len(prov['commands']) == 8
    dirs = [c.split(' --dir ')[1].split()[0] for c in prov['commands']]
    assert len(set(dirs)) == 8 and all(not pathlib.Path(d).exists() for d in dirs)
    assert all('--size 200' in c and 'filesize=0' in c for c in prov['commands'])
    out = next((tmp_path / 'rf' / 'output').rglob('MDEmptyFilesSmall_*'))
    docs = [json.loads((out / processes.json_name(i)).read_text()) for i in range(8)]
    assert all(d['status'] == 'ok' and d['ranks'] == 2 for d in docs)   # every launch as the first


@pytest.mark.reframe
def test_a_lost_process_fails_the_check_by_name(tmp_path):
    proc = reframe(tmp_path / 'rf', '-c', str(REPO / 'tests' / 'reframe_checks' / 'lost_process.py'),
                   '-r')
    assert proc.returncode != 0
    case = [c for c in report_cases(tmp_path / 'rf') if c['name'].startswith('LostProcess')][0]
    assert case['result'] == 'fail'
    assert 'process 2: no result document' in case['fail_reason']
    assert 'process 1' not in case['fail_reason']


def test_the_names_a_check_writes_are_the_names_the_index_reads():
    """One module names a further process's files (contract/process_files.py): every name the
    check writes is read back as that process's, and no other log is taken for one."""
    from contract import process_files as names
    for i in range(12):
        log = names.log_name('iobench.darshan', i)
        assert names.json_of_log(log) == names.json_name(i)
        assert names.further_process(log) == (f'p{i}' if i else None)
    for other in ('iobench.darshan', 'iobench.p0.darshan', 'x.pN.darshan', 'iobench.p1.json',
                  'run.p1/iobench.darshan'):
        assert names.further_process(other) is None, other
