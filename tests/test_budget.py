"""The nightly budget: what `reframe -lC` lists on archer2 and jureca-dc stays within the budget
each partition states (extras 'nightly_budget'), stripes only where striping matters, BenchIO's
nightly at rank counts that decompose in 3-D, and docs/site.md's table is ReFrame's real count.

Table for docs/site.md after a matrix change: python3 tests/test_budget.py
"""
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SETTINGS = REPO / 'configs' / 'settings.py'
SITES = ('archer2', 'jureca-dc')
CASE = re.compile(r'^- (\w+) (.*?) /[0-9a-f]{8} @([\w-]+:[\w-]+)\+([\w-]+)$')
STRIPED = ('BenchIO', 'BenchIOScaling', 'IORScaling', 'HaccMPIIO', 'NektarLarge')


def listing(system, cwd, *args):
    """[(check, {param: value}, 'system:partition', environ)] of `reframe -lC` (no fixtures);
    ``args``: more reframe options (e.g. --tag quick)."""
    proc = subprocess.run(['reframe', '-C', str(SETTINGS), '-c', str(REPO / 'reframe_checks'),
                           '--system', system, '-lC', '--nocolor', *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, IOREGRESS_ACCOUNT='',
                                                           IOREGRESS_SCRATCH='/scratch/x'))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cases = []
    for line in proc.stdout.splitlines():
        m = CASE.match(line.strip())
        if m:
            params = dict(p[1:].split('=', 1) for p in m.group(2).split())
            cases.append((m.group(1), params, m.group(3), m.group(4)))
    assert cases, proc.stdout[-2000:]
    return cases


def budgets(system):
    """{'system:partition': cases} from the system file itself."""
    import importlib.util
    name = system.replace('-', '_')
    spec = importlib.util.spec_from_file_location(name, REPO / 'configs' / 'systems' / f'{name}.py')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = {}
    for sysdef in mod.site_configuration['systems']:
        for part in sysdef['partitions']:
            out[f"{sysdef['name']}:{part['name']}"] = part['extras']['nightly_budget']['cases']
    return out


@pytest.fixture(scope='module')
def site_cases(tmp_path_factory):
    return {s: listing(s, tmp_path_factory.mktemp(s)) for s in SITES}


def counts_table(site_cases):
    """The markdown table of docs/site.md: test cases per check and partition, then totals."""
    parts = [p for s in SITES for p in budgets(s)]
    per = collections.Counter((c[0], c[2]) for cases in site_cases.values() for c in cases)
    checks = sorted({c for c, _ in per})
    rows = ['| check | ' + ' | '.join(f'`{p}`' for p in parts) + ' |',
            '|---|' + '---:|' * len(parts)]
    rows += [f'| {c} | ' + ' | '.join(str(per[(c, p)]) for p in parts) + ' |' for c in checks]
    totals = collections.Counter(c[2] for cases in site_cases.values() for c in cases)
    limit = {p: n for s in SITES for p, n in budgets(s).items()}
    rows.append('| **all (budget)** | ' + ' | '.join(f'**{totals[p]}** ({limit[p]})' for p in parts) + ' |')
    return '\n'.join(rows)


def test_every_partition_is_within_its_budget(site_cases):
    for system, cases in site_cases.items():
        count = collections.Counter(c[2] for c in cases)
        for part, limit in budgets(system).items():
            assert 0 < count[part] <= limit, f'{part}: {count[part]} test cases, budget {limit}'


def test_stripes_only_where_striping_matters(site_cases):
    striped = [(c, p) for c, p, _, _ in site_cases['archer2'] if p.get('stripe', 'default') != 'default']
    checks = {c for c, _ in striped}
    assert checks == set(STRIPED), checks
    # menu stripes at nightly sizes only (quick is a smoke test)
    assert {p['size'] for c, p in striped if c in ('BenchIO', 'HaccMPIIO')} == {'256', '1000000'}
    # GPFS: no stripe axis at all
    assert {p.get('stripe', 'default') for _, p, _, _ in site_cases['jureca-dc']} == {'default'}


def test_benchio_nightly_decomposes_in_3d_and_scaling_sweeps_stripes(site_cases):
    for system in SITES:
        shapes = {(p['size'], p['ranks']) for c, p, _, _ in site_cases[system] if c == 'BenchIO'}
        assert shapes == {('64', '2'), ('256', '128')}, (system, shapes)
    scaling = {(p['ranks'], p['stripe']) for c, p, _, _ in site_cases['archer2'] if c == 'BenchIOScaling'}
    assert scaling == {(r, s) for r in ('128', '256', '512', '1024') for s in ('default', 'c-1-S1M')}


def test_nightly_rank_counts_decompose_in_3d(site_cases, tmp_path):
    """MPI_Dims_create(n, 3) of every nightly BenchIO rank count has no dimension of 1 (local:
    8 = 2x2x2; sites: 128 = 8x4x4), so the nightly exercises the 3-D pattern; local keeps a
    1-2 rank quick series."""
    pytest.importorskip('mpi4py', reason='mpi4py not installed (ci/setup.sh)')
    local = listing('local', tmp_path)
    shapes = {(p['size'], p['ranks']) for c, p, _, _ in local if c == 'BenchIO'}
    assert shapes == {('64', '1'), ('64', '2'), ('256', '1'), ('256', '2'), ('96', '8')}, shapes
    nightly = {int(p['ranks']) for cases in (local, *site_cases.values())
               for c, p, _, _ in cases if c == 'BenchIO' and int(p['ranks']) > 2}
    assert nightly == {8, 128}
    for n in nightly:
        # MPI_Dims_create in a process of its own: MPI_Init inside pytest would leave the
        # singleton's environment to every later mpirun the tests start (they then exit 1, silent)
        dims = subprocess.run([sys.executable, '-c', 'import sys; from mpi4py import MPI; '
                               'print(*MPI.Compute_dims(int(sys.argv[1]), 3))', str(n)],
                              capture_output=True, text=True, timeout=120)
        assert dims.returncode == 0, dims.stderr
        assert min(map(int, dims.stdout.split())) > 1, (n, dims.stdout)


def test_environment_without_the_library_lists_no_case(site_cases):
    cray = {p['io'].split(':')[0] for c, p, _, env in site_cases['archer2']
            if env == 'PrgEnv-cray' and 'io' in p}
    assert cray and not cray & {'adios2', 'sionlib'}, cray


def test_site_md_prints_the_real_counts(site_cases):
    table = counts_table(site_cases)
    text = (REPO / 'docs' / 'site.md').read_text()
    assert table in text, 'docs/site.md: replace the budget table with\n' + table


if __name__ == '__main__':
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        print(counts_table({s: listing(s, tmp) for s in SITES}))
    sys.exit(0)


def test_a_shape_says_its_suite(tmp_path):
    """A (size, ranks) pair is in the suite whose shape lists it: n=256 is quick at 1-2 ranks on
    `local` (the bandwidth-bound checks the stack factor is read on) and nightly at 128 ranks on a
    site, where the quick suite stays at n=64."""
    quick = {(p['size'], p['ranks']) for c, p, _, _ in listing('local', tmp_path, '--tag', 'quick')
             if c == 'BenchIO'}
    assert quick == {('64', '1'), ('64', '2'), ('256', '1'), ('256', '2')}, quick
    site = tmp_path / 'archer2'
    site.mkdir()
    nightly = {(p['size'], p['ranks']) for c, p, _, _ in listing('archer2', site, '--tag', 'nightly')
               if c == 'BenchIO'}
    quick = {(p['size'], p['ranks']) for c, p, _, _ in listing('archer2', site, '--tag', 'quick')
             if c == 'BenchIO'}
    assert ('256', '128') in nightly and ('256', '128') not in quick and quick == {('64', '2')}
