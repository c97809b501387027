"""The ReFrame side, for real: ReFrame runs in a subprocess on the `local` system, builds iobench
through the IOBenchBuild fixture and runs it under mpirun with 2 ranks.

The session's one real run of the README's quick-suite command (ci/quick.sh, tests/conftest.py
`quick_run`) feeds most assertions;
the failure cases (impossible reference, malformed reference, killed or hung rank, unknown system)
each run ReFrame on one small check.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from iobench_lib import installed
from tests.support.reframe_runs import CHECKS, reframe, report_cases, SETTINGS

REPO = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.reframe

# Always built and required to pass on `local`; hdf5 when Debian's parallel HDF5 is there.
REQUIRED = ['posix:fpp', 'posix:shared', 'mpiio:independent', 'mpiio:collective']
if installed.hdf5_parallel_prefix():
    REQUIRED += ['hdf5:independent', 'hdf5:collective']
PERFLOG_FIXED = ['job_completion_time', 'reframe version', 'name', 'system', 'partition',
                 'environ', 'iob_params', 'jobid', 'result', 'iob_reps', 'iob_provenance']


def write_refs(path, entries, require=False):
    """A reference file in the layout of configs/references/*.yaml for BenchIO on local:default."""
    lines = [f'require_reference: {"true" if require else "false"}', 'BenchIO:',
             '  $index: [$partition, iob_params]', "  'local:default':"]
    for key, perf in entries.items():
        lines.append(f"    '{key}':")
        lines += [f'      {var}: {val}' for var, val in perf.items()]
    path.write_text('\n'.join(lines) + '\n')
    return path


FPP_KEY = 'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default'


def test_quick_suite_passes(quick_run):
    out, proc = quick_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = {c['io']: c for c in report_cases(out) if c['name'].startswith('BenchIO')}
    for io in REQUIRED:
        assert cases[io]['result'] == 'pass', (io, cases[io]['fail_reason'])
    for io, case in cases.items():
        assert case['result'] in ('pass', 'skip'), (io, case['fail_reason'])
        assert 'quick' in case['tags']
    # The script says where everything went, and it is there.
    for what in ('output', 'perflogs', 'report.json', 'reframe.log'):
        assert str(out / what) in proc.stdout
        assert (out / what).exists(), what


def test_quick_suite_writes_verified_results(quick_run):
    out, _ = quick_run
    for case in report_cases(out):
        if case['name'].startswith('BenchIO') and case['result'] == 'pass':
            doc = json.loads((pathlib.Path(case['outputdir']) / 'result.json').read_text())
            assert doc['status'] == 'ok' and doc['verify'] is True
            assert [doc['backend'], doc['mode']] == case['io'].split(':')
            n = int(case['size'])
            assert n in (64, 256) and doc['bytes_total'] == doc['ranks'] * n ** 3 * 8
            assert len(doc['repetitions']) == 5      # base.py quick_repeat
            for rep in doc['repetitions']:
                assert rep['write']['bytes'] == rep['read']['bytes'] == doc['bytes_total']
                assert rep['read']['verified'] is True
                assert not any(os.path.exists(f) for f in rep['files'])


def test_quick_suite_draws_bandwidth_vs_ranks(quick_run):
    """A newcomer's first page: the quick suite's 1- and 2-rank series give the figure."""
    out, proc = quick_run
    ranks = {c['num_tasks'] for c in report_cases(out) if c['name'].startswith('BenchIO')
             and c['result'] == 'pass'}
    assert {1, 2} <= ranks, ranks
    figures = list((out / 'post' / 'report').rglob('bw_vs_ranks_*.png'))
    assert figures, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert 'no series with two or more rank counts' not in proc.stderr


def test_build_happens_once_per_environment(quick_run):
    out, _ = quick_run
    cases = report_cases(out)
    builds = [c for c in cases if c['name'].startswith('IOBenchBuild')]
    runs = [c for c in cases if c['name'].startswith('BenchIO') and c['result'] == 'pass']
    assert len(builds) == 1 and builds[0]['result'] == 'pass'
    assert len(runs) >= len(REQUIRED)
    build = builds[0]
    for c in runs:
        assert [d[0] for d in c['dependencies_actual']] == [build['unique_name']]
        # under Darshan capture (ci/quick.sh with setup's darshan-runtime) the ranks run
        # `env LD_PRELOAD=... DARSHAN_...=... <iobench>`: the same binary
        binary = os.path.join(build['stagedir'], 'build', 'iobench')
        assert c['executable'] == binary or c['executable'].endswith(f' {binary}')


def _perflog_records(path):
    header, rows = None, []
    for line in path.read_text().splitlines():
        if line.startswith('job_completion_time|'):
            header = line.split('|')
        elif line.strip():
            rows.append(line.split('|'))
    return header, rows


def test_perflog_line_has_contract_fields(quick_run):
    out, _ = quick_run
    header, rows = _perflog_records(out / 'perflogs' / 'local' / 'default' / 'BenchIO.log')
    assert header[:len(PERFLOG_FIXED)] == PERFLOG_FIXED
    assert len(rows) >= len(REQUIRED)
    for row in rows:
        fixed = dict(zip(PERFLOG_FIXED, row))
        assert re.fullmatch(r'reframe 4\.10\.\d+', fixed['reframe version'])
        assert (fixed['system'], fixed['partition'], fixed['environ']) == ('local', 'default', 'mpi-gnu')
        assert fixed['result'] == 'pass'
        params = dict(kv.split('=') for kv in fixed['iob_params'].split(','))
        assert list(params) == sorted(params)
        assert set(params) == {'backend', 'mode', 'pattern', 'ranks', 'size', 'stripe'}
        assert params['size'] in ('64', '256') and params['stripe'] == 'default'
        assert params['ranks'] in ('1', '2')
        n = int(params['size'])
        reps = dict(ph.split('=') for ph in fixed['iob_reps'].split(';'))
        assert set(reps) == {'write', 'read'}
        for samples in reps.values():
            pairs = [s.split(':') for s in samples.split(',')]
            assert len(pairs) == 5                # base.py quick_repeat
            assert all(int(b) == int(params['ranks']) * n ** 3 * 8 and float(t) > 0
                       for b, t in pairs)
        prov = json.loads(fixed['iob_provenance'])
        for key in ('system', 'partition', 'environ', 'library_versions', 'hints_in_effect',
                    'stripe', 'sync_method', 'cache_defeat', 'command', 'build'):
            assert key in prov, key
        assert prov['command'].split()[1:3] == ['--backend', params['backend']]
        perf = row[len(PERFLOG_FIXED):]
        assert len(perf) % 5 == 0                # groups of 5 (ReFrame drops the last '|')
        names = {}
        for i in range(0, len(perf), 5):
            name, value = perf[i].split('=')
            names[name] = (float(value), perf[i + 1])
        for var in ('write_bw', 'read_bw', 'write_access_bw', 'read_access_bw'):
            assert names[var][1] == 'MiB/s' and names[var][0] > 0
        for var in ('write_open_s', 'write_close_s', 'read_open_s', 'read_close_s'):
            assert names[var][1] == 's' and names[var][0] >= 0
        assert names['read_cache_resident'][1] == 'fraction'
        assert 0 <= names['read_cache_resident'][0] <= 1


def test_impossible_reference_is_a_performance_failure(tmp_path):
    refs = write_refs(tmp_path / 'refs.yaml',
                      {FPP_KEY: {'write_bw': "[1000000000, -0.1, null, 'MiB/s']"}})
    proc = reframe(tmp_path / 'rf', '-c', CHECKS, '-r', '-n', 'BenchIO.*size=64.*ranks=2.*io=posix:fpp', '--tag', 'quick',
                   '-S', f'reference_file={refs}')
    assert proc.returncode != 0
    assert 'performance' in proc.output.lower()
    case = [c for c in report_cases(tmp_path / 'rf') if c['name'].startswith('BenchIO')][0]
    assert case['result'] == 'fail' and case['fail_phase'] == 'performance'
    assert case['perfvalues']['local:default:write_bw'][1] == 1e9
    # the terminal verdict (ci/quick.sh's last step) names the failure with ReFrame's reason
    summary = subprocess.run([sys.executable, '-m', 'postprocess', 'summary', '--run', str(tmp_path / 'rf')],
                             cwd=REPO, capture_output=True, text=True, timeout=300)
    lines = summary.stdout.splitlines()
    assert lines[0].startswith('ioregress: ') and ': 1 passed, 1 failed, 0 skipped' in lines[0], lines
    assert any(re.match(r'  FAILED +BenchIO posix/fpp ranks=2 size=64 in performance: '
                        r'performance error: failed to meet reference\(s\): write_bw=', line)
               for line in lines), lines


def test_reference_within_band_passes_and_missing_entry_fails_when_required(tmp_path):
    # A band from 0 to 1e6 MiB/s must pass; with require_reference the un-referenced
    # posix:shared run must fail naming the missing reference.
    refs = write_refs(tmp_path / 'refs.yaml',
                      {FPP_KEY: {'write_bw': "[1000, -1.0, 1000, 'MiB/s']",
                                 'read_bw': "[1000, -1.0, 1000, 'MiB/s']"}}, require=True)
    proc = reframe(tmp_path / 'rf', '-c', CHECKS, '-r', '-n', 'BenchIO.*size=64.*ranks=2.*io=posix:', '--tag', 'quick',
                   '-S', f'reference_file={refs}')
    cases = {c['io']: c for c in report_cases(tmp_path / 'rf') if c['name'].startswith('BenchIO')}
    assert cases['posix:fpp']['result'] == 'pass', cases['posix:fpp']['fail_reason']
    assert cases['posix:shared']['result'] == 'fail'
    reason = cases['posix:shared']['fail_reason']
    assert f'{refs}: no reference entry for BenchIO local:default backend=posix,mode=shared' in reason
    assert proc.returncode != 0


def test_malformed_reference_entry_is_a_clear_error(tmp_path):
    refs = write_refs(tmp_path / 'refs.yaml', {FPP_KEY: {'write_bw': "[fast, -0.1, null, 'MiB/s']"}})
    proc = reframe(tmp_path / 'rf', '-c', CHECKS, '-r', '-n', 'BenchIO.*size=64.*ranks=2.*io=posix:fpp', '--tag', 'quick',
                   '-S', f'reference_file={refs}')
    assert proc.returncode != 0
    case = [c for c in report_cases(tmp_path / 'rf') if c['name'].startswith('BenchIO')][0]
    assert case['fail_phase'] == 'setup'
    assert str(refs) in case['fail_reason']
    assert f"BenchIO.local:default.{FPP_KEY}.write_bw" in case['fail_reason']
    assert 'Traceback' not in proc.output


def test_unknown_system_is_a_clear_error(tmp_path):
    proc = subprocess.run(['reframe', '-C', SETTINGS, '--system', 'no-such-system', '-l'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "could not find a configuration entry for the requested system: 'no-such-system'" in \
        proc.stdout + proc.stderr
    assert 'Traceback' not in proc.stdout + proc.stderr


def test_backend_missing_from_build_is_skipped_with_reason(tmp_path):
    proc = reframe(tmp_path / 'rf', '-c', CHECKS, '-r', '-n', 'BenchIO.*io=hdf5:independent',
                   '--tag', 'quick', '-S', 'IOBenchBuild.cmake_options=-DIOBENCH_WITH_HDF5=OFF')
    assert proc.returncode == 0, proc.output[-2000:]
    reason = re.search(r'SKIP.*%io=hdf5:independent.*\[(.*)\]', proc.stdout).group(1)
    assert reason.startswith('backend hdf5') and ('not in this iobench build' in reason
                                                  or 'feature +hdf5 not on' in reason), reason


def test_unavailable_stripe_is_skipped_with_reason(tmp_path):
    proc = reframe(tmp_path / 'rf', '-c', CHECKS, '-r', '-n', 'BenchIO.*size=64.*ranks=2.*io=posix:fpp', '--tag', 'quick',
                   '-P', 'stripe=c4-S4M')
    assert proc.returncode == 0, proc.output[-2000:]
    case = [c for c in report_cases(tmp_path / 'rf') if c['name'].startswith('BenchIO')][0]
    assert case['result'] == 'skip'
    # ReFrame prints the reason on the SKIP line: not on local's stripe menu / no +lustre there
    reason = re.search(r'SKIP.*%stripe=c4-S4M.*\[(.*)\]', proc.stdout).group(1)
    assert "stripe 'c4-S4M'" in reason and ('+lustre' in reason or 'menu' in reason), reason


@pytest.mark.slow      # the hung rank waits out its 20 s time limit (~30 s in all)
def test_killed_rank_fails_fast_and_hung_rank_hits_time_limit(tmp_path):
    checks = str(REPO / 'tests' / 'reframe_checks' / 'rank_failure.py')
    proc = reframe(tmp_path / 'rf', '-c', checks, '-r')
    assert proc.returncode != 0
    cases = {c['signal']: c for c in report_cases(tmp_path / 'rf') if c['name'].startswith('RankFailure')}
    killed, hung = cases['KILL'], cases['STOP']
    assert killed['result'] == 'fail' and killed['fail_phase'] == 'sanity'
    assert 'iobench exit status' in killed['fail_reason']
    assert killed['time_run'] < 20          # well inside its 20 s limit
    assert hung['result'] == 'fail' and hung['fail_phase'] == 'run'
    assert 'timed out' in hung['fail_reason']
    assert hung['time_run'] < 20 + 15       # limit plus ReFrame's polling and kill grace
    leftovers = subprocess.run(['pgrep', '-f', str(tmp_path)], capture_output=True, text=True)
    assert leftovers.stdout == '', 'processes of the killed job survived'
