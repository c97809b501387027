"""configs/: every system file loads, `local` is last and its features are what is really here."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from iobench_lib import installed

REPO = pathlib.Path(__file__).resolve().parents[1]
SETTINGS = REPO / 'configs' / 'settings.py'


def show_config(tmp_path, what, env=None):
    """ReFrame's own view of the configuration (so the schema is checked too)."""
    proc = subprocess.run(['reframe', '-C', str(SETTINGS), '--system', 'local',
                           f'--show-config={what}'], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    start = min(i for i in (text.find('{'), text.find('[')) if i >= 0)
    return json.JSONDecoder().raw_decode(text[start:])[0]


def load_settings(env):
    """Import configs/settings.py in a fresh interpreter with `env`; returns site_configuration."""
    code = ('import importlib.util, json; s = importlib.util.spec_from_file_location("s", %r); '
            'm = importlib.util.module_from_spec(s); s.loader.exec_module(m); '
            'print(json.dumps(m.site_configuration))' % str(SETTINGS))
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, **env))
    return json.loads(out.stdout)


def test_every_system_file_loads_and_local_is_last():
    cfg = load_settings({})
    names = [s['name'] for s in cfg['systems']]
    assert names[-1] == 'local'
    assert len(names) == len(set(names))
    files = [p for p in (REPO / 'configs' / 'systems').glob('*.py') if not p.name.startswith('_')]
    assert len(names) >= len(files)


def test_local_partition_as_reframe_sees_it(tmp_path):
    part = show_config(tmp_path, 'systems/0/partitions/0')
    assert (part['name'], part['scheduler'], part['launcher'], part['max_jobs']) == \
        ('default', 'local', 'mpirun', 1)
    assert 'lustre' not in part['features']
    env = dict(part['env_vars'])
    assert env['OMPI_ALLOW_RUN_AS_ROOT'] == env['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM'] == '1'
    assert part['extras']['stripes'] == ['default']
    assert part['extras']['iobench_build'] == 'cmake'


def _local_env(cfg):
    return [e for e in cfg['environments'] if e['name'] == 'mpi-gnu' and 'local' in e['target_systems']][0]


def test_features_follow_what_is_installed(tmp_path):
    env = _local_env(load_settings({'IOREGRESS_DARSHAN_LIB': str(tmp_path / 'nope.so'),
                                    'IOREGRESS_ADIOS2_DIR': str(tmp_path / 'nope')}))
    assert env['cc'] == 'mpicc'
    assert 'mpi' in env['features']
    assert ('hdf5' in env['features']) == (installed.hdf5_parallel_prefix() is not None)
    assert 'darshan' not in env['features'] and 'adios2' not in env['features']

    # A libdarshan.so that exists and an ADIOS2 prefix with its CMake package directory count.
    lib = tmp_path / 'libdarshan.so'
    lib.write_bytes(b'')
    prefix = tmp_path / 'adios2-2.10.2'
    (prefix / 'lib' / 'cmake' / 'adios2').mkdir(parents=True)
    env = _local_env(load_settings({'IOREGRESS_DARSHAN_LIB': str(lib),
                                    'IOREGRESS_ADIOS2_DIR': str(prefix)}))
    assert {'darshan', 'adios2'} <= set(env['features'])
    assert env['extras']['darshan_lib'] == str(lib)
    assert env['extras']['adios2_dir'] == str(prefix)
    assert env['extras']['cmake_prefix_path'] == [str(prefix)]


def test_adios2_cache_picks_newest_complete_install(tmp_path, monkeypatch):
    monkeypatch.delenv('IOREGRESS_ADIOS2_DIR', raising=False)
    monkeypatch.delenv('IOREGRESS_CACHE', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    cache = tmp_path / '.cache' / 'ioregress'
    (cache / 'adios2-2.9.2' / 'lib64' / 'cmake' / 'adios2').mkdir(parents=True)
    (cache / 'adios2-2.10.2' / 'lib' / 'cmake' / 'adios2').mkdir(parents=True)
    for done in ('adios2-2.9.2', 'adios2-2.10.2'):   # build_adios2.sh's completion stamp
        (cache / done / '.ioregress-complete').touch()
    (cache / 'adios2-2.11.0').mkdir(parents=True)   # incomplete: no CMake package
    # interrupted: CMake package there, but build_adios2.sh never wrote its stamp
    (cache / 'adios2-2.12.0' / 'lib' / 'cmake' / 'adios2').mkdir(parents=True)
    (cache / 'adios2-build.log').write_text('')     # a file named like a build, beside them
    assert installed.adios2_dir() == str(cache / 'adios2-2.10.2')
    # setup's cache elsewhere ($IOREGRESS_CACHE): looked for there, as ci/build_adios2.sh puts it
    other = tmp_path / 'elsewhere'
    (other / 'adios2-2.11.0' / 'lib' / 'cmake' / 'adios2').mkdir(parents=True)
    (other / 'adios2-2.11.0' / '.ioregress-complete').touch()
    monkeypatch.setenv('IOREGRESS_CACHE', str(other))
    assert installed.adios2_dir() == str(other / 'adios2-2.11.0')


def test_sionlib_root_needs_sionconfig(tmp_path, monkeypatch):
    monkeypatch.setenv('SIONLIB_ROOT', str(tmp_path))
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    assert installed.sionlib_root() is None
    exe = tmp_path / 'bin' / 'sionconfig'
    exe.parent.mkdir()
    exe.write_text('#!/bin/sh\n')
    exe.chmod(0o755)
    assert installed.sionlib_root() == str(tmp_path)


@pytest.mark.parametrize('var', ['IOREGRESS_SCRATCH'])
def test_scratch_from_environment(tmp_path, var):
    part = show_config(tmp_path, 'systems/0/partitions/0', env={var: str(tmp_path)})
    assert part['extras']['scratch'] == str(tmp_path)


def test_a_sites_copy_of_local_py_works_on_its_own(tmp_path):
    """docs/site.md: a site starts from a copy of local.py. The copy needs no file beside it (it
    imports iobench_lib.installed, installed by ci/setup.sh): loaded as settings.py loads a system
    file, from a directory of its own, it is a system with this machine's detected libraries."""
    copy = tmp_path / 'systems' / 'mysite.py'
    copy.parent.mkdir()
    local = (REPO / 'configs' / 'systems' / 'local.py').read_text()
    copy.write_text(local.replace("'local'", "'mysite'"))
    code = ('import importlib.util, json, sys; '
            's = importlib.util.spec_from_file_location("m", sys.argv[1]); '
            'm = importlib.util.module_from_spec(s); s.loader.exec_module(m); '
            'print(json.dumps(m.site_configuration))')
    proc = subprocess.run([sys.executable, '-c', code, str(copy)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    cfg = json.loads(proc.stdout)
    assert [s['name'] for s in cfg['systems']] == ['mysite']
    env = cfg['environments'][0]
    assert env['target_systems'] == ['mysite'] and 'mpi' in env['features']
    assert ('hdf5' in env['features']) == (installed.hdf5_parallel_prefix() is not None)
