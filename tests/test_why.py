"""Unit tests of issue 20's parts (fast, no ReFrame): what the machine probe records, what
changed between two nights' provenance, acceptances (append-only, undo, re-baseline of a real
History), compare's selectors, the Darshan sentence, site notes by night, the empty Darshan index.
The end-to-end run with real nightlies is tests/test_why_e2e.py."""
import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

from iobench_lib import machine
from postprocess.accept import apply, store
from postprocess.common.errors import InputFault, UsageError
from postprocess.compare import select
from postprocess.history.store import History
from postprocess.why import darshan_io, notes, provenance, text
from postprocess.why.annotate import add_why

REPO = Path(__file__).resolve().parent.parent


def test_probe_runs_in_a_shell_and_parses(tmp_path):
    """The job-script lines really run (bash, as in a job script) and parse back."""
    cmds = machine.probe_commands(str(tmp_path), env_names=['HOME', 'IOREGRESS_UNSET_X'])
    subprocess.run(['bash', '-c', '\n'.join(cmds)], cwd=tmp_path, check=True,
                   env={'HOME': '/root', 'PATH': '/usr/bin:/bin'})
    got = machine.parse_probe((tmp_path / machine.FILE).read_text())
    assert got['kernel'] == subprocess.run(['uname', '-r'], capture_output=True,
                                           text=True).stdout.strip()
    assert len(got['load']) == 3 and all(isinstance(x, float) for x in got['load'])
    assert got['df']['used'].endswith('%') and got['df']['size_kib'] > 0
    assert got['mount']['target'] and got['mount']['options']
    assert got['env'] == {'HOME': '/root', 'IOREGRESS_UNSET_X': ''}
    src = Path(got['mount']['source']).name
    task = Path(f'/sys/fs/ext4/{src}/journal_task')
    if task.exists():   # ext4: the journal is recorded, as the kernel says it
        want = 'none' if task.read_text().strip() == '<none>' else 'yes'
        assert got['mount']['journal'] == want
    else:
        assert 'journal' not in got['mount']


def test_an_ext4_journal_change_is_named_by_why():
    mount = {'target': '/', 'fstype': 'ext4', 'source': '/dev/vda', 'options': 'rw'}
    text = ('mount\t/ ext4 /dev/vda rw\njournal\t<none>\n')
    assert machine.parse_probe(text)['mount'] == dict(mount, journal='none')
    assert machine.parse_probe('mount\t/ ext4 /dev/vda rw\njournal\t6765\n')['mount']['journal'] == 'yes'
    before = [{'machine': {'mount': dict(mount, journal='yes')}}]
    after = [{'machine': {'mount': dict(mount, journal='none')}}]
    assert 'ext4 journal yes → none' in provenance.changes(before, after)


def test_lfs_df_summary():
    lines = ['UUID 1K-blocks Used Available Use% Mounted on',
             'fs-MDT0000_UUID 100 10 90 10% /lustre[MDT:0]',
             'fs-OST0000_UUID 1000 500 500 50% /lustre[OST:0]',
             'fs-OST0001_UUID 1000 970 30 97% /lustre[OST:1]',
             'filesystem_summary: 2000 1470 530 74% /lustre']
    assert machine._lfs_summary(lines) == {'used': '74%', 'fullest_ost': 'fs-OST0001_UUID 97%'}


def prov(hdf5='1.10.8', kernel='6.1.0', load=0.5, used='41%', note=None):
    m = {'kernel': kernel, 'load': [load, load, load], 'df': {'used': used},
         'mount': {'fstype': 'lustre', 'source': 'mgs@tcp:/fs', 'options': 'rw,flock'},
         'nodelist': ['nid001']}
    if note:
        m['note'] = note
    return {'library_versions': {'hdf5': hdf5, 'mpi': 'Open MPI v4.1.4'}, 'machine': m,
            'command': f'iobench --dir /scratch/{load}', 'started': str(load)}


def test_changes_name_what_differs_and_ignore_what_does_not():
    assert provenance.changes([prov()], [prov(load=7.0)]) == []    # state and command are not
    assert provenance.changes([prov()], [prov(hdf5='1.12.3', kernel='6.1.1')]) == \
        ['HDF5 1.10.8 → 1.12.3', 'kernel 6.1.0 → 6.1.1']
    state = provenance.state_text(provenance.state([prov()]),
                                  provenance.state([prov(load=7.9, used='97%')]))
    assert state == 'load 0.5 → 7.9, filesystem 41 → 97 % full'


def run(day, check='BenchIO %io=hdf5', params='backend=hdf5', hdf5='1.10.8', note=None,
        secs=1.0):
    t = datetime.datetime.fromisoformat(f'{day}T03:00:00+00:00')
    return {'time': t, 'system': 'sys', 'partition': 'p', 'environ': 'e', 'check': check,
            'params': params, 'param_dict': dict(x.split('=') for x in params.split(',')),
            'reps': {'write': [(2 ** 20, secs)] * 3}, 'provenance': prov(hdf5=hdf5, note=note),
            'session': None, 'perf': {}, 'result': 'pass', 'jobid': '', 'source': ''}


def hdf5_finding(since, night='2026-01-04'):
    return {'system': 'sys', 'partition': 'p', 'environ': 'e', 'check': 'BenchIO %io=hdf5',
            'params': 'backend=hdf5', 'phase': 'write', 'status': 'regression',
            'since': since, 'night': night}


def test_a_change_after_since_is_named_with_its_night():
    runs = [run('2026-01-0%d' % d) for d in (1, 2, 3)] + [run('2026-01-04', hdf5='1.12.3')]
    f = hdf5_finding('2026-01-03')
    add_why([f], runs)
    assert f['why']['last_good'] == '2026-01-02'
    assert f['why']['changed'] == ['HDF5 1.10.8 → 1.12.3 (from 2026-01-04)']


def test_why_compares_last_good_night_with_since():
    runs = [run('2026-01-0%d' % d) for d in (1, 2, 3)] + \
           [run('2026-01-04', hdf5='1.12.3', note='new stack')]
    f = hdf5_finding('2026-01-04')
    add_why([f], runs)
    assert f['why']['last_good'] == '2026-01-03'
    assert f['why']['changed'] == ['HDF5 1.10.8 → 1.12.3']
    assert f['why']['notes'] == [{'night': '2026-01-04', 'note': 'new stack'}]
    lines = text.terminal_lines(f)
    assert lines[0].strip() == 'changed since the last good night (2026-01-03): HDF5 1.10.8 → 1.12.3'
    assert any('note on 2026-01-04: new stack' in ln for ln in lines)


def test_group_finding_looks_at_its_own_checks_and_pairs_logs_of_one_series(tmp_path, monkeypatch):
    """A group finding (HDF5 checks) is explained by the HDF5 runs only: a posix run's new
    mount options are not named; its Darshan logs are those of one series on both nights."""
    def logged(day, check, params, name, **kw):
        r = run(day, check=check, params=params, **kw)
        (tmp_path / day).mkdir(exist_ok=True)
        (tmp_path / day / name).write_bytes(b'x')
        r['provenance'].update(darshan={'log': name}, machine={'outputdir': str(tmp_path / day)})
        return r
    posix_new = logged('2026-01-02', 'BenchIO %io=posix', 'backend=posix', 'p.darshan')
    posix_new['provenance']['machine']['mount'] = {'options': 'rw,noatime'}
    runs = [logged('2026-01-01', 'BenchIO %io=hdf5', 'backend=hdf5', 'h.darshan'),
            logged('2026-01-01', 'BenchIO %io=posix', 'backend=posix', 'p0.darshan'),
            logged('2026-01-02', 'BenchIO %io=hdf5', 'backend=hdf5', 'h2.darshan', hdf5='1.12.3'),
            posix_new]
    runs[3]['time'] += datetime.timedelta(minutes=5)   # the newest run of the night: posix
    group = {'system': 'sys', 'partition': 'p', 'environ': '*', 'check': '*', 'scope': 'group',
             'params': 'backend=hdf5', 'phase': 'write', 'status': 'regression',
             'since': '2026-01-02', 'night': '2026-01-02'}
    stack = dict(group, scope='stack', params='')
    seen = []
    import postprocess.darshan.triage as triage
    monkeypatch.setattr(triage, 'diff_logs', lambda a, b: seen.append((Path(a).name, Path(b).name))
                        or [])
    monkeypatch.setattr(darshan_io, '_insights', lambda log: (set(), None))
    add_why([group, stack], runs)
    assert group['why']['changed'] == ['HDF5 1.10.8 → 1.12.3'], group['why']
    assert any(c.startswith('mount options') for c in stack['why']['changed']), stack['why']
    # the group: its HDF5 logs; the stack: the newest series with a log on both nights (posix)
    assert seen == [('h.darshan', 'h2.darshan'), ('p0.darshan', 'p.darshan')], seen


def test_accept_store_is_append_only_and_undo_works(tmp_path):
    a = store.append(tmp_path, {'action': 'accept', 'system': 'sys', 'partition': None,
                                'checks': ['hdf5'], 'since': '2026-01-04', 'reason': 'new'})
    first = (tmp_path / store.FILE).read_text()
    assert [r['id'] for r in store.active(store.load(tmp_path))] == [a['id']]
    store.append(tmp_path, {'action': 'undo', 'id': a['id'], 'reason': 'back'})
    assert (tmp_path / store.FILE).read_text().startswith(first)
    assert store.active(store.load(tmp_path)) == []
    (tmp_path / store.FILE).write_text(first + '{not json\n')
    with pytest.raises(InputFault, match=r'accepted.jsonl:2'):
        store.load(tmp_path)
    assert store.results_of(str(tmp_path / 'perflogs' / 'sys')) == str(tmp_path)


def test_an_acceptance_marks_the_findings_of_the_series_it_names():
    rec = {'id': 'x', 'system': 'sys', 'partition': None, 'checks': ['hdf5'],
           'since': '2026-01-03', 'reason': 'r'}
    f = [{'system': 'sys', 'partition': 'p', 'check': 'BenchIO %io=hdf5', 'params': 'backend=hdf5',
          'night': '2026-01-04'}, {'system': 'sys', 'partition': 'p', 'check': '*', 'params': '',
                                   'night': '2026-01-04'},
         {'system': 'sys', 'partition': 'p', 'check': 'BenchIO %io=hdf5', 'params': 'backend=hdf5',
          'night': '2026-01-02'}]
    apply.mark(f, [rec])
    assert f[0]['accepted']['reason'] == 'r' and 'accepted' not in f[1] and 'accepted' not in f[2]


def test_selectors():
    runs = [run('2026-01-0%d' % d, note='new' if d > 3 else None) for d in range(1, 6)]
    History(runs)                                        # assigns sessions
    assert sorted(select.sessions(runs, '2026-01-02..2026-01-03').values()) == \
        ['2026-01-02', '2026-01-03']
    assert sorted(select.sessions(runs, '..2026-01-02').values()) == ['2026-01-01', '2026-01-02']
    assert sorted(select.sessions(runs, 'note:new').values()) == ['2026-01-04', '2026-01-05']
    assert len(select.sessions(runs, 'session:2026-01-05')) == 1
    for bad in ('yesterday', '2026-01-05..2026-01-01', 'note:', ''):
        with pytest.raises(UsageError):
            select.parse(bad)


def test_compare_judges_after_against_before():
    from postprocess.compare.cli import judge
    runs = [run(f'2026-01-0{d}', secs=1.0 + 0.02 * (d % 3)) for d in range(1, 7)] + \
           [run(f'2026-01-0{d}', secs=2.0) for d in (7, 8)]
    found, nights, after = judge(runs, '..2026-01-06', '2026-01-07..')
    assert len(nights) == 6 and len(after) == 2
    assert [f['status'] for f in found] == ['regression']
    same, _, _ = judge([run(f'2026-01-0{d}', secs=1.0 + 0.02 * (d % 3)) for d in range(1, 9)],
                       '..2026-01-06', '2026-01-07..')
    assert [f['status'] for f in same] == ['ok']


def test_darshan_sentence():
    changes = [{'module': 'POSIX', 'kind': 'operations', 'counter': 'POSIX_WRITES', 'a': 100,
                'b': 400, 'score': 3},
               {'module': 'POSIX', 'kind': 'request size histogram',
                'counter': 'POSIX_SIZE_WRITE_100K_1M', 'a': 100, 'b': 390, 'score': 2.9},
               {'module': 'POSIX', 'kind': 'request size histogram',
                'counter': 'POSIX_SIZE_WRITE_1M_4M', 'a': 0, 'b': 10, 'score': 1000},
               {'module': 'MPI-IO', 'kind': 'collective vs independent',
                'counter': 'MPIIO_COLL_WRITES', 'a': 8, 'b': 0, 'score': 1000}]
    assert darshan_io.sentence(changes) == \
        '4× more write requests (100 → 400), most 100K–1M bytes; no collective MPI-IO writes'
    assert darshan_io.sentence([]) is None
    assert darshan_io.explain([run('2026-01-01')], [run('2026-01-02')]) == {}   # no logs


def _times(op, **layers):
    counters = {'HDF5': 'H5D', 'MPIIO': 'MPIIO', 'POSIX': 'POSIX'}
    return [{'module': k, 'kind': 'time (sum over ranks)', 'counter': f'{counters[k]}_F_{op}_TIME',
             'a': a, 'b': b, 'score': 1.0} for k, (a, b) in layers.items()]


def test_darshan_sentence_says_which_layer_took_the_time():
    # a slower HDF5: its own time grows, the layers below it do not
    slow_hdf5 = _times('WRITE', HDF5=(0.2, 12.0), MPIIO=(0.25, 0.12), POSIX=(0.3, 0.1))
    got = darshan_io.sentence(slow_hdf5, 'write')
    assert got.startswith('write time (all ranks) HDF5 0.2 s → 12 s, MPI-IO 0.25 s → 0.12 s, '
                          'POSIX 0.3 s → 0.1 s: the added time is inside HDF5, above MPI-IO'), got
    # a slower filesystem: every layer grows by what POSIX grew
    slow_fs = _times('WRITE', HDF5=(1.0, 2.0), MPIIO=(0.9, 1.9), POSIX=(0.8, 1.8))
    assert darshan_io.sentence(slow_fs, 'write').endswith(
        'the added time is in the POSIX calls themselves: the filesystem or its client')
    # ROMIO's two-phase gone slow: MPI-IO grows, POSIX below it does not
    slow_mpiio = _times('WRITE', MPIIO=(1.0, 3.0), POSIX=(0.8, 0.9))
    assert 'inside MPI-IO, above POSIX' in darshan_io.sentence(slow_mpiio, 'write')
    # a faster night says where the time was saved
    assert 'the saved time is inside HDF5' in darshan_io.sentence(
        _times('WRITE', HDF5=(12.0, 0.2), MPIIO=(0.12, 0.25), POSIX=(0.1, 0.3)), 'write')
    # not for another phase, not for a change within a fifth, not for one layer alone
    assert darshan_io.sentence(slow_hdf5, 'read') is None
    assert darshan_io.sentence(_times('WRITE', HDF5=(1.0, 1.1), POSIX=(0.9, 1.0)), 'write') is None
    assert darshan_io.sentence(_times('WRITE', POSIX=(0.1, 1.0)), 'write') is None
    # no layer takes half of the growth: the times are shown, no layer is named
    spread = darshan_io.sentence(_times('WRITE', HDF5=(1.0, 3.0), MPIIO=(0.9, 2.1),
                                        POSIX=(0.8, 1.6)), 'write')
    assert spread.startswith('write time (all ranks) HDF5') and 'the added time' not in spread


def test_notes_by_night(tmp_path):
    runs = [run('2026-01-01'), run('2026-01-02', note='Lustre 2.15.4 upgrade')]
    history = History(runs)
    got = notes.by_night(history, [('sys', 'p', runs[1]['time'], 'Lustre 2.15.4 upgrade')])
    assert got == {('sys', 'p'): {'2026-01-02': 'Lustre 2.15.4 upgrade'}}


def test_empty_darshan_index_says_why(tmp_path):
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    case = {'outputdir': str(run_dir / 'o'), 'stagedir': str(run_dir / 's'), 'name': 'BenchIO',
            'iob_provenance': json.dumps({'darshan': {'log': 'no darshan log',
                                                      'why': 'no +darshan feature here'}})}
    (run_dir / 'report.json').write_text(json.dumps({'runs': [{'testcases': [case]}]}))
    out = tmp_path / 'idx'
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'darshan-index', str(run_dir),
                           '-o', str(out)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert 'no +darshan feature here (1)' in proc.stdout
    page = (out / 'index.html').read_text()
    assert 'No Darshan log in this run' in page and 'no +darshan feature here' in page
    assert 'darshan-capture.md' in page


def test_accept_cli_needs_reason_and_a_matching_series(tmp_path):
    def pp(*a):
        return subprocess.run([sys.executable, '-m', 'postprocess', 'accept', *a], cwd=REPO,
                              capture_output=True, text=True)
    proc = pp('--results', str(tmp_path), '--list')
    assert proc.returncode == 0 and '0 acceptance(s)' in proc.stdout
    proc = pp('--results', str(tmp_path), '--system', 'x', '--since', '2026-01-01')
    assert proc.returncode == 2 and '--reason' in proc.stderr
    proc = pp('--results', str(tmp_path), '--system', 'x', '--since', '2026-01-01', '--reason',
              'r', '--check', '(')
    assert proc.returncode == 2 and "'('" in proc.stderr
    assert not (tmp_path / store.FILE).exists()


def test_note_marker_on_a_png_history_figure():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from postprocess.report.plots import _note_markers
    days = [datetime.date(2026, 1, d) for d in (1, 2, 3)]
    fig, ax = plt.subplots()
    ax.plot(days, [1, 2, 3])
    _note_markers(ax, days, {'2026-01-02': 'Lustre 2.15.4 upgrade'})
    assert [ln.get_label() for ln in ax.lines][-1] == 'site note'
    assert [t.get_text() for t in ax.texts] == ['Lustre 2.15.4 upgrade']
    plt.close(fig)


def test_needed_nights_reach_the_last_good_night_across_a_gap():
    from postprocess.why.annotate import needed_nights
    runs = [run(d) for d in ('2026-01-01', '2026-01-02', '2026-01-03', '2026-11-23')]
    f = hdf5_finding('2026-11-23', night='2026-11-23')
    assert needed_nights([f], History(runs)) == {'2026-01-03', '2026-11-23'}


def test_spack_lock_hash_and_running_jobs(tmp_path):
    env = tmp_path / 'spack_env'
    env.mkdir()
    (env / 'spack.lock').write_text('{"roots": []}')
    import hashlib
    want = hashlib.sha256(b'{"roots": []}').hexdigest()[:16]
    assert machine.lock_hash({'spack_env': 'spack_env'}, str(tmp_path)) == want
    assert machine.lock_hash({'build': 'cmake'}, str(tmp_path)) is None
    # squeue as it is here: a count when a Slurm answers, else the reason, never an exception
    got = machine.running_jobs(['--partition=nosuchpartition'])
    assert got == 0 or (isinstance(got, str) and got.startswith('unknown ('))


def test_the_file_systems_own_telemetry_is_shown_beside_the_machine_state():
    provs = [{'machine': {'load': [2.0, 1.0, 1.0], 'fs_telemetry': {'oss_cpu': v}}}
             for v in (20.0, 30.0, 90.0)]
    got = provenance.state(provs)
    assert got == {'load': 2.0, 'fs': {'oss_cpu': 30.0}}
    assert provenance.state_text({'fs': {'oss_cpu': 20.0}}, got) == 'load ? → 2.0, oss_cpu 20.0 → 30.0'
    from postprocess.why import state
    assert state.text(got) == 'load 2 · oss_cpu 30'
