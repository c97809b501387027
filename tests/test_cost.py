"""`python -m postprocess cost`: its node-hours for archer2's nightly are ReFrame's own. A real
ReFrame dry run of the nightly (`reframe --tag nightly --dry-run`: every job script written,
nothing submitted) is read job script by job script (#SBATCH --ntasks, --ntasks-per-node,
--time); the cost command's jobs must be those scripts (plus the IORPairs jobs the dry run skips
only because this machine has no IOR) with the same nodes and time limit each."""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.reframe
ENV = dict(os.environ, IOREGRESS_ACCOUNT='', IOREGRESS_SCRATCH='/scratch/x')


def cost(*args, **kw):
    return subprocess.run([sys.executable, '-m', 'postprocess', 'cost', *args], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=900, **kw)


def sbatch(script):
    """(nodes, seconds) of one job script, as Slurm reads its directives."""
    text = script.read_text()
    tasks = int(re.search(r'^#SBATCH --ntasks=(\d+)$', text, re.M).group(1))
    per = re.search(r'^#SBATCH --ntasks-per-node=(\d+)$', text, re.M)
    h, m, s = map(int, re.search(r'^#SBATCH --time=(\d+):(\d+):(\d+)$', text, re.M).groups())
    return (math.ceil(tasks / int(per.group(1))) if per else 1), h * 3600 + m * 60 + s


def test_archer2_node_hours_are_reframes_own(tmp_path):
    # one programming environment of the three, on both sides (ReFrame's -p, given to cost after
    # --): the same checks and job shapes as the others, a third of the dry run's 488 cases
    out = tmp_path / 'cost.json'
    proc = cost('--system', 'archer2', '--json', str(out), '--', '-p', '^PrgEnv-gnu$')
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    mine = {(j['partition'], j['environ'], f"{j['check']}_{j['hash']}"): j for j in doc['job_list']}

    dry = subprocess.run(['reframe', '-C', str(REPO / 'configs' / 'settings.py'),
                          '-c', str(REPO / 'reframe_checks'), '--system', 'archer2', '--tag',
                          'nightly', '-x', '^IOR', '-p', '^PrgEnv-gnu$', '--dry-run', '--prefix', str(tmp_path / 'dry'),
                          '--nocolor'],
                         cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=1800)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-2000:]
    assert {j['environ'] for j in doc['job_list']} == {'PrgEnv-gnu'}
    scripts = {}
    for script in (tmp_path / 'dry' / 'stage' / 'archer2').glob('*/*/*/rfm_job.sh'):
        part, env, name = script.parts[-4:-1]
        scripts[(part, env, name)] = sbatch(script)
    # IOR beside iobench (IORPairs, IORCompare) left out of the dry run: with IOR built, their dry
    # run fails on its dependencies here; their jobs are held to cost's own figures below
    no_ior = {k for k in mine if k[2].startswith('IOR')}
    assert set(mine) == set(scripts) | no_ior, (set(mine) ^ (set(scripts) | no_ior))
    for key, (nodes, seconds) in scripts.items():
        assert (mine[key]['nodes'], mine[key]['time_limit_s']) == (nodes, seconds), key
    for part in doc['partitions']:
        reframes = sum(n * s / 3600 for (p, _, _), (n, s) in scripts.items() if p == part['partition'])
        reframes += sum(mine[k]['node_hours'] for k in no_ior if k[0] == part['partition'])
        assert part['node_hours'] == pytest.approx(reframes), part['partition']
    # and what it printed is that figure
    total = sum(n * s / 3600 for n, s in scripts.values()) + sum(mine[k]['node_hours'] for k in no_ior)
    assert f'{total:.1f} node-hours' in proc.stdout, proc.stdout


def test_time_limit_knob_changes_node_hours(tmp_path):
    """-S time_limit=30m (passed on as after nightly.sh's --) is ReFrame's knob, and cost shows it."""
    a, b = tmp_path / 'a.json', tmp_path / 'b.json'
    assert cost('--system', 'jureca-dc', '--json', str(a)).returncode == 0
    proc = cost('--system', 'jureca-dc', '--json', str(b), '--', '-S', 'time_limit=30m')
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(b.read_text())['job_list']
    assert {j['time_limit_s'] for j in jobs if j['check'] != 'IORPairs'} == {1800.0}
    assert json.loads(b.read_text())['node_hours'] == pytest.approx(sum(j['node_hours'] for j in jobs))
    assert json.loads(b.read_text())['node_hours'] != json.loads(a.read_text())['node_hours']


@pytest.mark.parametrize('args, named', [
    (['--system', 'nosuch'], "'nosuch'"),
    (['--system', 'archer2', '--confirm-repeat', '-1'], "'-1'"),
    (['--system', 'archer2', '--results', '/nonexistent/results'], "'/nonexistent/results'"),
])
def test_bad_input_is_one_line_exit_2(args, named):
    proc = cost(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr
