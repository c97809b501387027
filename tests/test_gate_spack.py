"""The gate's Spack path: the parts of two Spack stacks are the packages whose locked versions
differ, and a mix is a Spack environment made by Spack (gate/spack.py).

The lock difference is read from real lock files (the repository's spack_env/systems/local
lock, and one changed as an upgrade would change it). With Spack (on PATH or
$IOREGRESS_SPACK_ROOT, e.g. Spack 1.1.0 fetched into /opt) two environments that differ in the
ADIOS2 external (2.11.0 and 2.10.1: ci/build_adios2.sh's prefixes, else a declared one, which
concretizing never reads) are concretized and a mix is made and concretized; without Spack that
test skips, and a bisection says it was skipped.
"""
import copy
import json
import os
import subprocess
from pathlib import Path

import pytest

from gate import spack, stacks
from iobench_lib import spack_lock

REPO = Path(__file__).resolve().parent.parent
LOCK = REPO / 'spack_env' / 'systems' / 'local' / 'spack.lock'
CACHE = Path.home() / '.cache' / 'ioregress'


def _lock_dir(path, change=None, add=None):
    lock = json.loads(LOCK.read_text())
    for node in lock['concrete_specs'].values():
        if change and node['name'] in change:
            node['version'] = change[node['name']]
    if add:
        for name, version in add.items():
            node = copy.deepcopy(next(iter(lock['concrete_specs'].values())))
            node.update(name=name, version=version)
            lock['concrete_specs'][f'{name}hash'] = node
    path.mkdir()
    (path / 'spack.lock').write_text(json.dumps(lock))
    return str(path)


def test_lock_difference_is_the_parts(tmp_path):
    a = _lock_dir(tmp_path / 'a')
    b = _lock_dir(tmp_path / 'b', change={'hdf5': '1.14.3'}, add={'adios2': '2.10.1'})
    env_part = stacks.Part('extras', spack.KEY, a, b)
    other = stacks.Part('env', 'OMPI_MCA_io', 'ompio', 'romio321')
    got = spack.expand([other, env_part])
    assert [(p.name, p.a, p.b) for p in got] == [
        ('env OMPI_MCA_io', 'ompio', 'romio321'),
        ('spack adios2', None, '2.10.1'), ('spack hdf5', '1.10.8', '1.14.3')]
    assert got[2].dirs == (a, b) and got[2].label() == 'spack hdf5: 1.10.8 -> 1.14.3'
    # a side without a lock: the environment stays one part
    assert spack.expand([stacks.Part('extras', spack.KEY, a, str(tmp_path))])[0].kind == 'extras'


def test_without_spack_the_mix_cannot_be_made(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    monkeypatch.delenv('IOREGRESS_SPACK_ROOT', raising=False)
    if spack.spack_command() is not None:
        pytest.skip('spack in /usr/bin or /bin')
    a = _lock_dir(tmp_path / 'a')
    b = _lock_dir(tmp_path / 'b', change={'hdf5': '1.14.3'})
    part = spack.expand([stacks.Part('extras', spack.KEY, a, b)])
    with pytest.raises(spack.SpackMissing, match='no spack on PATH'):
        spack.realise(part, str(tmp_path / 'mix'))


ENV = '''spack:
  include:
  - {repo}/spack_env/common.yaml
  specs:
  - iobench+hdf5+adios2~sionlib
  develop:
    iobench:
      spec: iobench@=0.1.0
      path: {repo}/src
  view: false
  repos:
    ioregress: {repo}/spack_env/repo/spack_repo/ioregress
  packages:
    gcc:
      externals:
      - spec: gcc@12.2.0 languages:='c,c++,fortran'
        prefix: /usr
        extra_attributes:
          compilers: {{c: /usr/bin/gcc, cxx: /usr/bin/g++, fortran: /usr/bin/gfortran}}
      buildable: false
    mpi: {{buildable: false}}
    openmpi:
      externals: [{{spec: openmpi@4.1.4, prefix: /usr}}]
      buildable: false
    hdf5:
      externals:
      - spec: hdf5@1.10.8+mpi+hl+fortran+cxx api=v110
        prefix: /usr/lib/x86_64-linux-gnu/hdf5/openmpi
      buildable: false
    adios2:
      externals: [{{spec: adios2@{version}+mpi+hdf5, prefix: {prefix}}}]
      buildable: false
    cmake:
      externals: [{{spec: cmake@3.25.1, prefix: /usr}}]
      buildable: false
    gmake:
      externals: [{{spec: gmake@4.3, prefix: /usr}}]
      buildable: false
'''


@pytest.mark.slow
def test_spack_makes_the_mix_with_b_version(tmp_path):
    exe = spack.spack_command()
    if exe is None:
        pytest.skip('no spack on PATH and no IOREGRESS_SPACK_ROOT (ci/build_spack.sh makes one)')
    dirs = {}
    for side, version in (('a', '2.11.0'), ('b', '2.10.1')):
        prefix = CACHE / f'adios2-{version}'
        if not (prefix / '.ioregress-complete').exists():
            # Spack concretizes against what an external declares and reads nothing under its
            # prefix; 2.10.1 is built only when a gate first runs that stack (5 min), not by setup
            prefix = tmp_path / f'declared-adios2-{version}'
        d = tmp_path / side
        d.mkdir()
        (d / 'spack.yaml').write_text(ENV.format(repo=REPO, version=version, prefix=prefix))
        proc = subprocess.run([exe, '-e', str(d), 'concretize'], capture_output=True, text=True,
                              timeout=3600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        dirs[side] = str(d)
    parts = spack.expand([stacks.Part('extras', spack.KEY, dirs['a'], dirs['b'])])
    assert [(p.name, p.a, p.b) for p in parts] == [('spack adios2', '2.11.0', '2.10.1')]
    mix = spack.realise(parts, str(tmp_path / 'mix'), log=lambda text: None)
    got, want = spack_lock.versions(mix), spack_lock.versions(dirs['a'])
    assert got == dict(want, adios2='2.10.1')
    assert os.path.isfile(os.path.join(mix, 'spack.lock'))
