"""Live Darshan capture: iobench under a real darshan-runtime, and the quick suite's checks capturing it.

Needs libdarshan.so ($IOREGRESS_DARSHAN_LIB, else ci/build_darshan.sh's build in
~/.cache/ioregress, which ci/setup.sh makes); skipped with the reason when there is none.
"""
import json
import os
import pathlib
import subprocess

import pytest

from iobench_lib import installed

from contract import darshan_checks as C
from contract import darshan_facts as F
from tests.support.launch import mpirun_cmd

pytest.importorskip('darshan')

REPO = pathlib.Path(__file__).resolve().parents[1]
LIB = installed.built_here().get('IOREGRESS_DARSHAN_LIB') or '/opt/darshan/lib/libdarshan.so'
needs_darshan = pytest.mark.skipif(not os.path.isfile(LIB), reason=f'no darshan-runtime: {LIB} missing '
                                   '(ci/build_darshan.sh, or set IOREGRESS_DARSHAN_LIB)')


def _capture(iobench, tmp_path, backend, mode, data=None, extra_env=()):
    data = data or tmp_path / 'data'
    data.mkdir(exist_ok=True)
    log, res = tmp_path / f'{backend}-{mode}.darshan', tmp_path / f'{backend}-{mode}.json'
    # LD_PRELOAD through `env` under mpirun: the ranks are instrumented, the launcher is not
    cmd = mpirun_cmd(2) + ['env', f'LD_PRELOAD={LIB}', f'DARSHAN_LOGFILE={log}',
                           'DARSHAN_DISABLE_SHARED_REDUCTION=1', *extra_env, iobench, '--backend', backend,
                           '--mode', mode, '--size', '16', '--dir', str(data), '--repeat', '2',
                           '--json', str(res), '--quiet']
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert log.exists(), 'Darshan wrote no log'
    assert oct(log.stat().st_mode & 0o777) == '0o400'       # Darshan's own log mode
    result = json.loads(res.read_text())
    return F.log_facts(F.open_log(str(log)), F.files_from_result(result)), result


@needs_darshan
@pytest.mark.parametrize('mode, other', [('collective', 'independent'), ('independent', 'collective')])
def test_live_mpiio_capture_backs_the_claim(iobench, tmp_path, mode, other):
    facts, result = _capture(iobench, tmp_path, 'mpiio', mode)
    verdicts = C.check_run(facts, result)
    assert not C.failures(verdicts), C.format_verdicts(verdicts)
    m = facts['mpiio']
    assert (m['coll_writes'] > 0) == (mode == 'collective') and (m['indep_writes'] > 0) == (mode != 'collective')
    assert m['syncs'] > 0 and facts['darshan_version']
    assert C.failures(C.check_run(facts, dict(result, mode=other)))
    assert not (tmp_path / 'data').exists() or not list((tmp_path / 'data').iterdir())  # iobench cleaned up


@needs_darshan
def test_data_under_a_darshan_exclusion_is_seen(iobench, tmp_path):
    # /dev/shm is under Darshan's built-in /dev/ exclusion: the check's exclusion list lets it in
    from iobench_lib.darshan import exclude_dirs_for
    data = pathlib.Path('/dev/shm') / f'ioregress-darshan-{os.getpid()}'
    assert exclude_dirs_for('/scratch/run') is None
    assert exclude_dirs_for(str(data), [('environment', {'DARSHAN_EXCLUDE_DIRS': '/x/'})]) is None
    exclude = exclude_dirs_for(str(data))
    assert '/dev/' not in exclude.split(',') and '/proc/' in exclude.split(',')
    try:
        (tmp_path / 'blind').mkdir()     # a log of the same name is never overwritten by Darshan
        blind, result = _capture(iobench, tmp_path / 'blind', 'posix', 'fpp', data)
        assert C.failures(C.check_run(blind, result))   # Darshan's default: no POSIX record at all
        facts, result = _capture(iobench, tmp_path, 'posix', 'fpp', data,
                                 [f'DARSHAN_EXCLUDE_DIRS={exclude}'])
        assert not C.failures(C.check_run(facts, result)), C.format_verdicts(C.check_run(facts, result))
    finally:
        subprocess.run(['rm', '-rf', str(data)])


@needs_darshan
def test_live_launcher_is_not_instrumented(iobench, tmp_path):
    facts, _ = _capture(iobench, tmp_path, 'posix', 'fpp')
    assert facts['nprocs'] == 2 and 'iobench' in facts['exe'] and 'mpirun' not in facts['exe']


@needs_darshan
@pytest.mark.reframe
def test_quick_suite_keeps_a_checked_log_per_iobench_run_listed_by_the_index(quick_run):
    """The README's first command (the session's one real quick run, tests/conftest.py): every
    iobench run of every check is captured, one readable log each (MDEmptyFiles' 8 processes one
    each, none overwriting another), each log's counters agree with its own result document; the
    Darshan index lists every log as passing its checks and the page links the index; the perflogs
    carry Darshan's figures and how the run was captured."""
    out, proc = quick_run
    assert 'Darshan index:' in proc.stdout, proc.stdout[-2000:]
    listed = {row['log']: row for row in
              json.loads((out / 'post' / 'darshan' / 'index.json').read_text())}
    docs = sorted((out / 'output').rglob('result*.json'))
    assert len(docs) >= 20, docs
    for path in docs:
        suffix = path.name[len('result'):-len('.json')]          # '' or '.p1' ... '.p7'
        log = path.parent / f'iobench{suffix}.darshan'
        doc = json.loads(path.read_text())
        facts = F.log_facts(F.open_log(str(log)), F.files_from_result(doc))
        assert facts['nprocs'] == doc['ranks'], log
        assert not C.failures(C.check_run(facts, doc)), (log, C.format_verdicts(C.check_run(facts, doc)))
        row = listed[str(log.relative_to(out))]
        assert row['verdict'] == 'pass', (log, row['message'])
        # Drishti reads each check's first process (30 s on each MDEmptyFiles log), says so for the rest
        assert (row['insights_error'] or '').startswith('Drishti read the first process') == bool(suffix), row
    assert sum('MDEmptyFiles' in str(p) for p in docs) == 8
    assert len(listed) == len(docs)
    assert 'darshan/index.html' in (out / 'post' / 'report' / 'index.html').read_text()
    perflogs = out / 'perflogs' / 'local' / 'default'
    benchio = (perflogs / 'BenchIO.log').read_text()
    assert 'darshan_bw=' in benchio and 'darshan_io_time=' in benchio
    assert '"capture":"LD_PRELOAD=' in benchio
    md = (perflogs / 'MDEmptyFiles.log').read_text()
    assert '"capture":"LD_PRELOAD=' in md and '"processes":8' in md


def test_site_darshan_detected_not_preloaded_twice(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / 'reframe_checks'))
    from iobench_lib.darshan import site_darshan
    plain = tmp_path / 'iobench'
    plain.write_bytes(b'\x7fELF plain binary')
    linked = tmp_path / 'iobench-cray'
    linked.write_bytes(b'\x7fELF ... darshan_core_initialize ...')   # what a static Darshan link leaves
    assert site_darshan([('environment', {})], [], str(plain)) is None
    why = site_darshan([('partition', {'LD_PRELOAD': '/opt/cray/darshan/lib/libdarshan.so'})], [], str(plain))
    assert 'site preloads Darshan' in why and 'partition' in why
    assert 'module' in site_darshan([('environment', {})], ['darshan/3.4.6'], str(plain))
    assert 'linked with Darshan' in site_darshan([('environment', {})], [], str(linked))
