"""configs/systems/example_slurm.py, the Slurm site README's "Adding your site" copies, loaded
through ReFrame: its partitions as ReFrame sees them (sbatch options from the environment), its
nightly within its budget, a dry run's job script (srun, the account, QoS and reservation, the
stripe of the Lustre menu), and a copy under another name in a configuration of its own."""
import collections
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.reframe
SITE_ENV = dict(os.environ, IOREGRESS_ACCOUNT='z19', IOREGRESS_QOS='standard',
                IOREGRESS_RESERVATION='ioregress-nightly', IOREGRESS_SCRATCH='/lustre/scratch/x')


def reframe(cwd, *args, config=REPO / 'configs' / 'settings.py', system='example-slurm'):
    proc = subprocess.run(['reframe', '-C', str(config), '-c', str(REPO / 'reframe_checks'),
                           '--system', system, '--nocolor', *args], cwd=cwd, env=SITE_ENV,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.stdout


def test_partitions_as_reframe_sees_them(tmp_path):
    import json
    text = reframe(tmp_path, '--show-config', 'systems/0/partitions')
    parts = {p['name']: p for p in json.loads(text[text.index('['):text.rindex(']') + 1])}
    assert set(parts) == {'compute', 'compute-spack'}
    for p in parts.values():
        assert (p['scheduler'], p['launcher']) == ('slurm', 'srun')
        assert {'--account=z19', '--qos=standard', '--reservation=ioregress-nightly'} <= set(p['access'])
        assert p['extras']['scratch'] == '/lustre/scratch/x' and 'lustre' in p['features']
    assert parts['compute-spack']['extras']['iobench_build'] == 'spack'
    assert (REPO / parts['compute-spack']['extras']['spack_env'] / 'spack.yaml').is_file()


def test_nightly_is_within_the_budget(tmp_path):
    cases = re.findall(r'^- \w+ .* @example-slurm:([\w-]+)\+', reframe(tmp_path, '-lC'), re.M)
    count = collections.Counter(cases)
    import importlib.util
    spec = importlib.util.spec_from_file_location('ex', REPO / 'configs' / 'systems' / 'example_slurm.py')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for part in mod.site_configuration['systems'][0]['partitions']:
        assert 0 < count[part['name']] <= part['extras']['nightly_budget']['cases'], (part['name'], count)


def test_a_dry_run_job_script_is_a_slurm_job_of_the_site(tmp_path):
    reframe(tmp_path, '-n', 'BenchIO.*size=256.*stripe=c4-S4M.*mpiio:collective', '-p', '^gnu$',
            '--dry-run', '--prefix', str(tmp_path / 'dry'))
    scripts = list((tmp_path / 'dry' / 'stage').rglob('rfm_job.sh'))
    assert len(scripts) == 1, scripts
    text = scripts[0].read_text()
    for line in ('#SBATCH --account=z19', '#SBATCH --qos=standard',
                 '#SBATCH --reservation=ioregress-nightly', '#SBATCH --ntasks=128',
                 '#SBATCH --ntasks-per-node=128', '#SBATCH --exclusive', '#SBATCH --time=2:0:0'):
        assert line in text.splitlines(), (line, text[:800])
    assert re.search(r'^srun .*iobench --backend mpiio --mode collective', text, re.M)
    assert 'lfs setstripe -c 4 -S 4194304 /lustre/scratch/x/ioregress-' in text


def test_a_copy_under_the_sites_name_is_a_system(tmp_path):
    """What README tells a site to do: copy the file, rename the system, list its checks."""
    configs = tmp_path / 'configs'
    (configs / 'systems').mkdir(parents=True)
    shutil.copy(REPO / 'configs' / 'settings.py', configs / 'settings.py')
    text = (REPO / 'configs' / 'systems' / 'example_slurm.py').read_text()
    (configs / 'systems' / 'mysite.py').write_text(text.replace('example-slurm', 'mysite'))
    shutil.copy(REPO / 'configs' / 'systems' / 'local.py', configs / 'systems' / 'local.py')
    out = reframe(tmp_path, '-l', '--tag', 'quick', config=configs / 'settings.py', system='mysite')
    assert re.search(r'^- BenchIO ', out, re.M), out[-2000:]
    # and what a night of it costs, from the site's own configuration
    import sys
    cost = subprocess.run([sys.executable, '-m', 'postprocess', 'cost', '--system', 'mysite',
                           '--config', str(configs / 'settings.py')], cwd=REPO, env=SITE_ENV,
                          capture_output=True, text=True, timeout=900)
    assert cost.returncode == 0, cost.stderr
    assert re.search(r'^  compute +\d+ +8 ', cost.stdout, re.M), cost.stdout
