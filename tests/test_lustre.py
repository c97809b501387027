"""Lustre striping (reframe_checks/iobench_lib/lustre.py) without Lustre.

Layout parsing runs on real `lfs getstripe` output (tests/fixtures/lustre/, from the Lustre
manual and the ARCHER2 user guide, see its README). Command construction and the skip/error paths
run through real ReFrame dry runs on throw-away systems (a +lustre one and one without) that a
temporary configuration adds beside the repository's own; the dry run writes the job script that
would run on the cluster, so the test reads the exact commands.
"""
import shlex
import subprocess
from pathlib import Path

import pytest

from iobench_lib import lustre
from tests.support import reframe_systems

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / 'tests' / 'fixtures' / 'lustre'

MiB = 1024 * 1024
EXPECTED = {
    'plain_file_S4M.txt': [(0, None, 1, 4 * MiB)],
    'plain_file_c1.txt': [(0, None, 1, MiB)],
    'dir_default_suffix.txt': [(0, None, 1, MiB)],
    'dir_default_plain_then_file.txt': [(0, None, 1, MiB)],
    'archer2_dir_default.txt': [(0, None, 1, MiB)],
    'pfl_dir_default.txt': [(0, 256 * MiB, 1, MiB), (256 * MiB, 16 * 1024 * MiB, 4, MiB),
                            (16 * 1024 * MiB, None, -1, 4 * MiB)],
    'pfl_file_written.txt': [(0, 4 * MiB, 1, MiB), (4 * MiB, 64 * MiB, 4, MiB),
                             (64 * MiB, None, 8, MiB)],
}


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_parse_real_getstripe_output(name):
    comps = lustre.parse_getstripe((FIXTURES / name).read_text())
    got = [(c['start'], c['end'], c['stripe_count'], c['stripe_size']) for c in comps]
    assert got == EXPECTED[name]


def test_every_fixture_is_covered():
    assert {p.name for p in FIXTURES.glob('*.txt')} == set(EXPECTED) | {'objects_only.txt'}


def test_objects_only_output_is_not_a_layout():
    with pytest.raises(ValueError, match='no stripe_count'):
        lustre.parse_getstripe((FIXTURES / 'objects_only.txt').read_text())


def test_layout_comparison():
    plain = lustre.parse_getstripe((FIXTURES / 'plain_file_S4M.txt').read_text())
    assert lustre.layout_problems(plain, 1, 4 * MiB) == []
    assert lustre.layout_problems(plain, 4, 4 * MiB) == ['stripe_count 1 != requested 4']
    assert lustre.layout_problems(plain, 1, MiB) == [f'stripe_size {4 * MiB} != requested {MiB}']
    pfl = lustre.parse_getstripe((FIXTURES / 'pfl_file_written.txt').read_text())
    assert 'composite' in lustre.layout_problems(pfl, 1, MiB)[0]
    # -1 (all OSTs) is satisfied by any positive count a file got, and by -1 in a directory.
    wide = [{'start': 0, 'end': None, 'stripe_count': 12, 'stripe_size': MiB}]
    assert lustre.layout_problems(wide, -1, MiB) == []
    assert lustre.layout_problems([dict(wide[0], stripe_count=-1)], -1, MiB) == []


@pytest.mark.parametrize('count,size,word', [
    ('x', '1M', "count 'x'"), (-2, '1M', 'count -2'), (1, '3M', "size '3M'"),
    (1, '32K', "size '32K'"), (1, '1M;rm -rf /', "size '1M;rm -rf /'"), (1, 0, 'size 0'),
    (True, '1M', 'count True'), ('4 -S 1M', '1M', "count '4 -S 1M'")])
def test_bad_stripe_values_are_refused(count, size, word):
    with pytest.raises(lustre.StripeError, match='bad stripe') as err:
        lustre.validate(count, size)
    assert word in str(err.value)


def test_menus_both_forms_and_bad_names():
    assert lustre.menu_of({'stripes': ['default', 'c1-S1M', 'c4-S4M', 'c-1-S128M']}) == {
        'default': None, 'c1-S1M': (1, MiB), 'c4-S4M': (4, 4 * MiB), 'c-1-S128M': (-1, 128 * MiB)}
    assert lustre.menu_of({'stripes': {'default': None, 'wide': {'count': -1, 'size': '64M'}}}) == {
        'default': None, 'wide': (-1, 64 * MiB)}
    assert lustre.menu_of({}) == {'default': None}
    for bad in (['c4;reboot'], ['$(id)'], ['c4-S4M '], ['wide']):
        with pytest.raises(lustre.StripeError, match='bad stripe name'):
            lustre.menu_of({'stripes': bad})
    with pytest.raises(lustre.StripeError, match='exactly count and size'):
        lustre.menu_of({'stripes': {'x': {'count': 1}}})


def test_commands_quote_paths():
    nasty = "/scratch/a b/'$(x)'"
    cmd = lustre.setstripe_command(nasty, -1, '128M')
    assert shlex.split(cmd) == ['lfs', 'setstripe', '-c', '-1', '-S', str(128 * MiB), nasty]
    assert shlex.split(lustre.getstripe_command(nasty)) == ['lfs', 'getstripe', '-d', nasty, '>',
                                                            lustre.LAYOUT_FILE]


def test_follow_knobs():
    args, notes = lustre.follow_args(['all'], 'mpiio', 4, 4 * MiB, {'cb_nodes': '2'}, {})
    assert args == ['--hint', 'striping_factor=4', '--hint', f'striping_unit={4 * MiB}']
    assert notes == ['cb_nodes: check sets 2']
    assert lustre.follow_args(['sionlib_fsblksize'], 'sionlib', 1, MiB, {}, {})[0] == \
        ['--param', f'fsblksize={MiB}']
    assert lustre.follow_args(['hdf5_alignment'], 'posix', 1, MiB, {}, {}) == ([], [])
    assert lustre.follow_args(['adios2_aggregators'], 'adios2', 2, MiB, {}, {}, mode='bp5')[0] == \
        ['--param', 'NumAggregators=2']
    assert lustre.follow_args(['adios2_aggregators'], 'adios2', 2, MiB, {}, {}, mode='hdf5') == ([], [])
    args, notes = lustre.follow_args(['adios2_aggregators'], 'adios2', -1, MiB, {}, {}, mode='bp4')
    assert args == [] and 'count -1' in notes[0]
    with pytest.raises(lustre.ConfigError, match="unknown stripe_follow knob 'bogus'"):
        lustre.follow_args(['bogus'], 'mpiio', 1, MiB, {}, {})


def test_repository_stripe_menus_are_valid():
    import importlib.util
    spec = importlib.util.spec_from_file_location('ioregress_settings', REPO / 'configs' / 'settings.py')
    settings = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(settings)
    lustre_parts = 0
    for system in settings.site_configuration['systems']:
        for part in system['partitions']:
            menu = lustre.menu_of(part.get('extras', {}))
            assert 'default' in menu
            if 'lustre' in part.get('features', []):
                lustre_parts += 1
                assert len(menu) > 1, f'{system["name"]}:{part["name"]} is +lustre with no stripes'
            else:
                assert list(menu) == ['default'], f'{system["name"]}:{part["name"]} stripes off Lustre'
    assert lustre_parts >= 2


# ---- real ReFrame dry runs on throw-away systems ---------------------------------------------
def _dry_run(tmp_path, system, *extra):
    scratch = str(tmp_path / 'scratch')
    conf = reframe_systems.write_config(tmp_path / 'conf.py', [
        ('fake-lustre', ['lustre'], dict(stripes=['default', 'c4-S4M', 'c-1-S128M'], scratch=scratch)),
        ('no-lustre', [], dict(stripes=['default', 'c4-S4M'], scratch=scratch)),
        ('bad-menu', ['lustre'], dict(stripes=['default', 'c4-S3M'], scratch=scratch))])
    cmd = ['reframe', '-C', str(conf), '-c', str(REPO / 'reframe_checks' / 'benchio.py'),
           '--system', system, '--prefix', str(tmp_path / 'rf'), '-n', r'BenchIO.*io=mpiio:collective',
           '-P', 'size=96', '-P', 'ranks=8', '--dry-run', *extra]   # stripes: nightly sizes only
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return proc, proc.stdout + proc.stderr


def test_lustre_partition_stripes_before_iobench(tmp_path):
    proc, out = _dry_run(tmp_path, 'fake-lustre', '-S', 'stripe_follow=mpiio_striping')
    assert proc.returncode == 0, out[-3000:]
    scripts = {p.parent.name: p.read_text() for p in (tmp_path / 'rf').rglob('BenchIO_*/rfm_job.sh')}
    assert len(scripts) == 3, out[-2000:]       # default, c4-S4M, c-1-S128M
    striped = [s for s in scripts.values() if 'setstripe' in s]
    assert len(striped) == 2
    for script in striped:
        lines = script.splitlines()
        mk = next(i for i, ln in enumerate(lines) if ln.startswith('mkdir -p '))
        run_dir = shlex.split(lines[mk])[2]
        set_i = next(i for i, ln in enumerate(lines) if ' setstripe ' in ln)
        get_i = next(i for i, ln in enumerate(lines) if ' getstripe -d ' in ln)
        run_i = next(i for i, ln in enumerate(lines) if '--backend' in ln)
        assert mk < set_i < get_i < run_i             # striped before any file is created
        assert shlex.split(lines[set_i])[-1] == run_dir
    c4 = next(s for s in striped if '-c 4 ' in s)
    assert f'lfs setstripe -c 4 -S {4 * MiB} ' in c4
    assert f'--hint striping_factor=4 --hint striping_unit={4 * MiB}' in c4
    wide = next(s for s in striped if '-c -1 ' in s)
    assert 'striping_factor' not in wide              # count -1: OST count unknown, not hinted
    default = next(s for s in scripts.values() if 'setstripe' not in s)
    assert 'getstripe -d' in default                  # default layout still read back


def test_non_lustre_partition_skips_with_reason(tmp_path):
    proc, out = _dry_run(tmp_path, 'no-lustre')
    assert proc.returncode == 0, out[-3000:]
    assert "stripe 'c4-S4M' needs a +lustre partition; no-lustre:default has none" in out
    assert not any('setstripe' in p.read_text() for p in (tmp_path / 'rf').rglob('rfm_job.sh'))


def test_stripe_off_the_menu_skips(tmp_path):
    proc, out = _dry_run(tmp_path, 'no-lustre', '-P', 'stripe=c1-S1M')
    assert proc.returncode == 0, out[-3000:]
    assert "stripe 'c1-S1M' is not on no-lustre:default's menu (default, c4-S4M)" in out


def test_bad_menu_entry_fails_with_the_value(tmp_path):
    proc, out = _dry_run(tmp_path, 'bad-menu', '-P', 'stripe=c4-S3M')
    assert proc.returncode != 0
    assert "bad stripe size '3M' (a power-of-two multiple of 64 KiB)" in out
    assert 'Traceback' not in out
