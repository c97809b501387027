"""What is installed here, found when the ReFrame configuration is loaded.

Imported by the system files of machines like this one (configs/systems/local.py:
``from iobench_lib import installed``; a site's copy of it works the same, the package being
installed by ci/setup.sh). Each helper returns a path, or ``None`` when the thing is absent, so a
system file turns what exists into ReFrame features (``+hdf5``, ``+adios2``, ``+sionlib``,
``+darshan``) and ``extras`` that the checks read; nothing here ever fails the configuration load.
"""
import glob
import os
import re
import shutil
import subprocess

import ioregress_env


def _run(*cmd):
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def hdf5_parallel_prefix(pkg='hdf5-openmpi'):
    """Prefix of a parallel HDF5 known to pkg-config (Debian: hdf5-openmpi), else None."""
    if shutil.which('pkg-config') is None or _run('pkg-config', '--exists', pkg) is None:
        return None
    return _run('pkg-config', '--variable=prefix', pkg) or '/usr'


def _version_key(path):
    # (0, number) before (1, word): 'dev', a hash or a file name never meets an int
    return [(0, int(x)) if x.isdigit() else (1, x) for x in re.split(r'[.-]', os.path.basename(path))]


def cache_dir():
    """Where ci/setup.sh builds the tools (ci/build_*.sh): $IOREGRESS_CACHE, else ~/.cache/ioregress."""
    return os.path.expanduser(ioregress_env.get('IOREGRESS_CACHE'))


def _cached(name, probe):
    """Newest $IOREGRESS_CACHE/<name>-<version>/ whose build finished (ci/build_*.sh write the
    .ioregress-complete stamp last) and that has the file `probe`; None otherwise."""
    for prefix in sorted(glob.glob(os.path.join(cache_dir(), f'{name}-[0-9]*')), key=_version_key,
                         reverse=True):
        if os.path.exists(os.path.join(prefix, '.ioregress-complete')) and \
                os.path.exists(os.path.join(prefix, probe)):
            return prefix
    return None


def adios2_dir():
    """ADIOS2 install prefix: $IOREGRESS_ADIOS2_DIR, else the newest $IOREGRESS_CACHE/adios2-*/
    (what ci/build_adios2.sh installs). A prefix counts only if it has lib*/cmake/adios2, and a cache
    install only once build_adios2.sh wrote its completion stamp (an interrupted build does not count)."""
    env = ioregress_env.get('IOREGRESS_ADIOS2_DIR')
    candidates = [env] if env else sorted(
        glob.glob(os.path.join(cache_dir(), 'adios2-[0-9]*')), key=_version_key, reverse=True)
    for prefix in candidates:
        stamped = env or os.path.exists(os.path.join(prefix, '.ioregress-complete'))
        if prefix and stamped and glob.glob(os.path.join(prefix, 'lib*', 'cmake', 'adios2')):
            return os.path.abspath(prefix)
    return None


def sionlib_root():
    """SIONlib prefix: $SIONLIB_ROOT (with bin/sionconfig), else the prefix of `sionconfig` on PATH."""
    env = os.environ.get('SIONLIB_ROOT')
    if env and os.access(os.path.join(env, 'bin', 'sionconfig'), os.X_OK):
        return os.path.abspath(env)
    exe = shutil.which('sionconfig')
    if exe:
        return os.path.dirname(os.path.dirname(os.path.realpath(exe)))
    return None


def darshan_lib():
    """libdarshan.so named by $IOREGRESS_DARSHAN_LIB, if that file exists."""
    lib = ioregress_env.get('IOREGRESS_DARSHAN_LIB')
    return os.path.abspath(lib) if lib and os.path.isfile(lib) else None


def built_here():
    """The variables that point the suite at what ci/setup.sh built in the cache: {name: value}
    for each tool present, the environment's own value first (a site's choice wins). ci/quick.sh,
    ci/nightly.sh and tests/conftest.py export them (`python3 -m iobench_lib.installed`)."""
    lib = _cached('darshan', os.path.join('lib', 'libdarshan.so'))
    found = {
        'SIONLIB_ROOT': _cached('sionlib', os.path.join('bin', 'sionconfig')),
        'IOR_ROOT': _cached('ior', os.path.join('bin', 'ior')),
        'IOREGRESS_DARSHAN_LIB': lib and os.path.join(lib, 'lib', 'libdarshan.so'),
        'IOREGRESS_SPACK_ROOT': _cached('spack', os.path.join('etc', 'spack', 'repos.yaml')),
    }
    return {k: os.environ.get(k) or v for k, v in found.items() if os.environ.get(k) or v}


def iobench_build():
    """How iobench is built: 'cmake' (default) or what $IOREGRESS_BUILD says (e.g. 'spack')."""
    return ioregress_env.get('IOREGRESS_BUILD')


def scratch():
    """Directory for data files: $IOREGRESS_SCRATCH, else None (= each test's stage directory)."""
    path = ioregress_env.get('IOREGRESS_SCRATCH')
    return os.path.abspath(path) if path else None


def library_features():
    """(features, extras) of the I/O libraries found here, for an environment entry."""
    features, extras = ['mpi'], {}
    found = {
        'hdf5': hdf5_parallel_prefix(),
        'adios2': adios2_dir(),
        'sionlib': sionlib_root(),
        'darshan': darshan_lib(),
    }
    extra_name = {'hdf5': 'hdf5_dir', 'adios2': 'adios2_dir',
                  'sionlib': 'sionlib_root', 'darshan': 'darshan_lib'}
    for feature, path in found.items():
        if path:
            features.append(feature)
            extras[extra_name[feature]] = path
    # CMake looks for ADIOS2 under CMAKE_PREFIX_PATH; SIONlib through SIONLIB_ROOT (see build.py).
    extras['cmake_prefix_path'] = [p for p in (found['adios2'],) if p]
    return features, extras


def this_machine_extras():
    """Partition extras shared by the systems that run on this machine (local, local-slurm).
    rank_counts: what the scaling checks sweep here (reframe_checks/iobench_lib/scaling.py)."""
    return {'iobench_build': iobench_build(), 'scratch': scratch(), 'stripes': ['default'],
            'rank_counts': [1, 2],
            # BenchIO (iobench_lib/matrix.py): a 1-2 rank series in the quick suite at 2 MiB per
            # rank (latency-bound) and 128 MiB (n=256: phases of 0.2-0.5 s here, bandwidth-bound:
            # the checks the verdict's stack factor is judged on, docs/verdicts.md), and the
            # nightly at 8 ranks (2x2x2: the 3-D decomposition) with a small block (6.75 MiB/rank).
            'benchio_shapes': {'quick': {'sizes': [64, 256], 'ranks': [1, 2]},
                               'nightly': {'sizes': [96], 'ranks': [8]}}}


def mpi_gnu_environment(system):
    """The `mpi-gnu` programming environment of this machine (system's mpicc), with the library
    features and extras detected now."""
    features, extras = library_features()
    return {'name': 'mpi-gnu', 'target_systems': [system], 'cc': 'mpicc',
            'features': features, 'extras': extras}


if __name__ == '__main__':
    # `eval "$(python3 -m iobench_lib.installed)"`: export what ci/setup.sh built (built_here()).
    import shlex
    for key, value in built_here().items():
        print(f'export {key}={shlex.quote(value)}')
