"""Build fixture: iobench compiled once per (partition, environment), however many tests use it.

How it is built is a partition choice, `extras['iobench_build']`:
- 'cmake' (default): CMake from the repository's src/, with CMAKE_PREFIX_PATH and SIONLIB_ROOT
  from the environment's extras so the optional backends (ADIOS2, SIONlib) are found.
- 'spack': delegated to the module `iobench_lib/spack_build.py`, which provides
      configure(build_test)  called before compile: set build_system / commands / variables;
      locate(build_test)     called before sanity: return (iobench_path, backends, provenance dict).
  The checks never know which path was taken.
"""
import importlib
import os
import pathlib
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, sanity_function, variable
from reframe.core.exceptions import ConfigError

import ioregress_env

SRC_DIR = str(pathlib.Path(__file__).resolve().parents[2] / 'src')


class IOBenchBuild(rfm.CompileOnlyRegressionTest):
    """Compile iobench and record which backends the build has (iobench-features.txt)."""

    descr = 'Build iobench (once per partition and environment)'
    build_system = 'CMake'
    sourcesdir = SRC_DIR
    #: CMake build type.
    build_type = variable(str, value='Release')
    #: Extra CMake options, after the environment's extras['cmake_options'], e.g.
    #: ['-DIOBENCH_WITH_HDF5=OFF'] (`-S IOBenchBuild.cmake_options=...`).
    cmake_options = variable(typ.List[str], value=[])
    #: Filled before sanity: absolute path of the iobench executable.
    iobench_path = variable(str, value='')
    #: Filled before sanity: backends compiled in, e.g. ['posix', 'mpiio', 'hdf5'].
    backends = variable(typ.List[str], value=[])
    #: Filled before sanity: how it was built, for the checks' provenance.
    build_provenance = variable(dict, value={})
    #: A CMake build directory of this checkout's src/ (iobench + iobench-features.txt) to use
    #: instead of compiling again: $IOREGRESS_IOBENCH_DIR (tests share one build across their
    #: ReFrame runs). Ignored with cmake_options, a non-default build_type or iobench_build spack.
    prebuilt_dir = variable(str, value=ioregress_env.get('IOREGRESS_IOBENCH_DIR') or '')

    def _prebuilt(self):
        return (self.prebuilt_dir if self.prebuilt_dir and self._how() == 'cmake'
                and not self.cmake_options and self.build_type == 'Release' else None)

    def _how(self):
        return self.current_partition.extras.get('iobench_build', 'cmake')

    def _spack(self):
        try:
            return importlib.import_module(f'{__package__}.spack_build')
        except ModuleNotFoundError as err:
            raise ConfigError(f"partition {self.current_partition.fullname}: iobench_build is "
                              f"'spack' but {__package__}/spack_build.py cannot be imported: {err}")

    @run_before('compile')
    def configure_build(self):
        how = self._how()
        if how == 'spack':
            self._spack().configure(self)
        elif self._prebuilt():
            self.build_system = 'CustomBuild'
            self.build_system.commands = [f'test -x {shlex.quote(self._prebuilt())}/iobench']
        elif how == 'cmake':
            extras = self.current_environ.extras
            prefixes = extras.get('cmake_prefix_path', [])
            self.build_system.builddir = 'build'
            self.build_system.max_concurrency = int(extras.get('build_jobs', 2))
            self.build_system.config_opts = [f'-DCMAKE_BUILD_TYPE={self.build_type}']
            if prefixes:
                self.build_system.config_opts.append(f'-DCMAKE_PREFIX_PATH={";".join(prefixes)}')
            self.build_system.config_opts += list(extras.get('cmake_options', []))
            self.build_system.config_opts += self.cmake_options
            if extras.get('sionlib_root'):
                self.env_vars['SIONLIB_ROOT'] = extras['sionlib_root']
        else:
            raise ConfigError(f'partition {self.current_partition.fullname}: unknown '
                              f"iobench_build {how!r} (expected 'cmake' or 'spack')")

    @run_before('sanity')
    def locate_iobench(self):
        if self._how() == 'spack':
            self.iobench_path, self.backends, self.build_provenance = self._spack().locate(self)
            return
        build_dir = self._prebuilt() or os.path.join(self.stagedir, 'build')
        self.iobench_path = os.path.join(build_dir, 'iobench')
        features = os.path.join(build_dir, 'iobench-features.txt')
        try:
            with open(features) as fp:
                self.backends = fp.read().split()
        except OSError:
            self.backends = []
        if self._prebuilt():
            self.build_provenance = {'build': 'prebuilt', 'dir': self._prebuilt(),
                                     'backends': self.backends}
            return
        self.build_provenance = {'build': 'cmake', 'build_type': self.build_type,
                                 'cmake_prefix_path': self.current_environ.extras.get(
                                     'cmake_prefix_path', []),
                                 'backends': self.backends}

    @sanity_function
    def built(self):
        return sn.all([
            sn.assert_true(os.access(self.iobench_path, os.X_OK),
                           msg=f'no executable iobench at {self.iobench_path}'),
            sn.assert_true('posix' in self.backends,
                           msg='iobench-features.txt missing or lacks posix'),
        ])
