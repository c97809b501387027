"""The Spack build path of IOBenchBuild (build.py calls configure() and locate()).

Chosen when the partition's extras say ``'iobench_build': 'spack'``. The fixture switches to
ReFrame's own ``Spack`` build system pointed at the *absolute* path of the system's environment,
``spack_env/systems/<system>`` (or extras ``'spack_env'``), so the shipped ``spack.lock`` is used
as is (a copy in the stage directory would re-concretize on every test) and iobench comes from
the repository's src/ through the environment's ``develop:`` entry. The tests then run the
installed iobench by absolute path: Spack RPATHs its libraries, so the run jobs need neither
Spack nor ``spack load``. Systems that never set 'spack' never import Spack.

Partition extras read here (an environment's extras override them):
  spack_env    environment directory (absolute, or relative to the repository root);
  spack_setup  shell commands that put `spack` on PATH (e.g. ['module load spack']);
  build_jobs   `spack install -j` (default 2).
$IOREGRESS_SPACK_ROOT (a Spack checkout) is put on PATH when set.

Concurrency: the fixture has scope 'environment', so one install per partition+environment; two
partitions sharing one Spack environment still serialise on a flock in the environment directory.
"""
import json
import os
import pathlib
import shlex

from reframe.core.exceptions import ConfigError, SanityError

import ioregress_env
from iobench_lib import spack_lock

REPO = pathlib.Path(__file__).resolve().parents[2]
SRC_DIR = str(REPO / 'src')
FIND_JSON = 'spack-iobench.json'
FIND_TXT = 'spack-iobench.txt'
PREFIX_TXT = 'spack-iobench-prefix.txt'
VERSION_TXT = 'spack-version.txt'
#: Dependencies of iobench whose exact build matters for I/O results.
IO_DEPS = ('mpi', 'hdf5', 'adios2', 'sionlib')


def env_dir(system_name, extras):
    """Absolute Spack environment directory for a partition (checked to hold a spack.yaml)."""
    path = extras.get('spack_env') or str(REPO / 'spack_env' / 'systems' / system_name)
    path = os.path.abspath(os.path.join(REPO, path))
    if not os.path.isfile(os.path.join(path, 'spack.yaml')):
        raise ConfigError(f"iobench_build 'spack': no spack.yaml in spack_env {path!r}")
    if any(c.isspace() for c in path):
        raise ConfigError(f"iobench_build 'spack': spack_env path contains whitespace {path!r}")
    return path


def setup_commands(extras, environ=None):
    """Shell lines that make `spack` callable in the build job, or fail it with one clear line."""
    cmds = []
    root = ioregress_env.get('IOREGRESS_SPACK_ROOT', environ)
    if root:
        cmds.append(f'export PATH={shlex.quote(os.path.join(root, "bin"))}:"$PATH"')
    cmds += list(extras.get('spack_setup', []))
    cmds.append('command -v spack >/dev/null || { echo "ioregress: iobench_build is spack but '
                'no spack on PATH (set IOREGRESS_SPACK_ROOT or extras spack_setup)" >&2; exit 2; }')
    return cmds


def configure(test):
    """Turn the IOBenchBuild fixture into a `spack -e <env> install` of the environment."""
    # an environment's own spack_env (a stack of `python -m gate`, docs/gate.md) wins
    extras = {**test.current_partition.extras, **test.current_environ.extras}
    env = env_dir(test.current_system.name, extras)
    q = shlex.quote(env)
    test.build_system = 'Spack'
    test.build_system.environment = env
    test.build_system.specs = []             # install what the environment (and its lock) says
    test.build_system.emit_load_cmds = False
    test.build_system.install_opts = ['-j', str(int(extras.get('build_jobs', 2)))]
    # The lock lives as long as the build script's shell: one install per environment at a time.
    test.prebuild_cmds = setup_commands(extras) + [
        f'mkdir -p {q}/.spack-env', f'exec 9>{q}/.spack-env/ioregress-install.lock', 'flock 9']
    locked = spack_lock.dev_path(env)
    if locked and os.path.realpath(locked) != os.path.realpath(SRC_DIR):
        # The shipped lock names another checkout's src/: re-concretize once for this one.
        test.prebuild_cmds.append(f'spack -e {q} concretize -f')
    test.postbuild_cmds = [
        f'spack -e {q} location -i iobench > {PREFIX_TXT}',
        f'spack -e {q} find --deps --json iobench > {FIND_JSON}',
        f'spack -e {q} find -lv --deps iobench > {FIND_TXT}',
        f'spack --version > {VERSION_TXT}',
    ]
    test.keep_files = list(test.keep_files) + [FIND_JSON, FIND_TXT, VERSION_TXT]


def _node_label(node):
    label = f'{node["name"]}@{node["version"]} /{node["hash"][:7]}'
    ext = node.get('external')
    if ext:
        label += f' external:{ext.get("module") or ext.get("path")}'
    return label


def _variants(node):
    params = node.get('parameters', {})
    return ''.join(('+' if v else '~') + k for k, v in sorted(params.items()) if isinstance(v, bool))


def _arch_part(value):
    """A field of a spec's arch: a string, or (a target Spack resolved to a microarchitecture,
    e.g. zen2) a dict with its name, features and parents."""
    return value.get('name', '?') if isinstance(value, dict) else str(value)


def summarize(nodes):
    """Compact provenance from `spack find --deps --json iobench`: iobench's spec and the I/O
    libraries (MPI, HDF5, ADIOS2, SIONlib) it links, each with version, hash and external prefix."""
    by_hash = {n['hash']: n for n in nodes}
    roots = [n for n in nodes if n['name'] == 'iobench']
    if len(roots) != 1:
        raise ValueError(f'expected one iobench in the spack find output, found {len(roots)}')
    root = roots[0]
    deps = {}
    for dep in root.get('dependencies', []):
        node = by_hash.get(dep['hash'])
        virtuals = dep.get('parameters', {}).get('virtuals', [])
        if node is None or 'link' not in dep.get('parameters', {}).get('deptypes', []):
            continue
        key = next((v for v in virtuals if v in IO_DEPS), node['name'])
        if key in IO_DEPS:
            deps[key] = _node_label(node)
    return {
        'iobench': f'iobench@{root["version"]}{_variants(root)} /{root["hash"][:7]}',
        'dev_path': root.get('parameters', {}).get('dev_path'),
        'arch': '-'.join(_arch_part(root.get('arch', {}).get(k, '?'))
                         for k in ('platform', 'platform_os', 'target')),
        'deps': deps,
    }


def _read(stagedir, name):
    with open(os.path.join(stagedir, name)) as fp:
        return fp.read().strip()


def locate(test):
    """(iobench path, backends, provenance) of the iobench the environment installed; a
    SanityError (fails the build fixture) if the install did not finish or used other sources."""
    stagedir = test.stagedir
    if test.is_dry_run():      # nothing was installed; the generated build script is the output
        return '', [], {'build': 'spack', 'spack_env': os.path.relpath(
            test.build_system.environment, REPO), 'note': 'dry run: not installed'}
    try:
        prefix = _read(stagedir, PREFIX_TXT)
        nodes = json.loads(_read(stagedir, FIND_JSON))
        spack_version = _read(stagedir, VERSION_TXT)
    except (OSError, ValueError) as err:
        raise SanityError(f'spack install of {test.build_system.environment} did not finish '
                          f'({err}); see the build log') from None
    try:
        with open(os.path.join(prefix, 'share', 'iobench', 'iobench-features.txt')) as fp:
            backends = fp.read().split()
    except OSError:
        backends = []
    prov = {'build': 'spack', 'spack': spack_version,
            'spack_env': os.path.relpath(test.build_system.environment, REPO)}
    prov.update(summarize(nodes))
    prov['backends'] = backends
    if prov['dev_path'] and os.path.realpath(prov['dev_path']) != os.path.realpath(SRC_DIR):
        # The lock was concretized against another checkout: the binary is not from these sources.
        raise SanityError(f'spack iobench was built from {prov["dev_path"]}, not {SRC_DIR}: '
                          f're-concretize {prov["spack_env"]} (spack -e ... concretize -f)')
    return os.path.join(prefix, 'bin', 'iobench'), backends, prov
