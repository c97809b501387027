"""Alternative I/O stacks of machines like this one, for `python -m gate`
(docs/gate.md).

Each is a ReFrame environment derived from `mpi-gnu` that differs in real parts of the stack:
Open MPI's MPI-IO implementation (OMPI_MCA_io: ompio or romio321), OMPIO's collective algorithm
(OMPI_MCA_fcoll), the ADIOS2 version iobench is built against (a second version from its PyPI
sdist, built on first use by the gate through extras 'gate_setup', cached like the first), and a
default MPI-IO hint (extras 'mpiio_hints'). They are not in any partition's `environs`, so the
nightly never runs them; the gate adds the two it compares to the partition for its own runs.
Imported by configs/systems/local.py (``from iobench_lib import gate_stacks``), as installed.py.
"""
import copy
import os

from iobench_lib import installed

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = installed.cache_dir()     # $IOREGRESS_CACHE, else ~/.cache/ioregress
#: the second ADIOS2 (ci/build_adios2.sh builds 2.11.0 by default)
ADIOS2_OTHER = '2.10.1'


def adios2_prefix(version):
    return os.path.join(CACHE, f'adios2-{version}')


def _derive(base, name, env_vars=(), adios2=None, hints=None):
    env = copy.deepcopy(base)
    env['name'] = name
    env['env_vars'] = [list(v) for v in env.get('env_vars', [])] + [list(v) for v in env_vars]
    extras = env.setdefault('extras', {})
    if adios2:
        prefix = adios2_prefix(adios2)
        old = extras.get('adios2_dir')
        extras['adios2_dir'] = prefix
        extras['cmake_prefix_path'] = [p for p in extras.get('cmake_prefix_path', [])
                                       if p != old] + [prefix]
        # built once by the gate before the stack's first run (idempotent: a stamped install
        # is reused), into the cache this prefix names
        extras['gate_setup'] = [f'test -f {prefix}/.ioregress-complete || '
                                f'ADIOS2_PYPI_VERSION={adios2} IOREGRESS_CACHE={CACHE} '
                                f'{REPO}/ci/build_adios2.sh >/dev/null']
        env['features'] = sorted(set(env.get('features', [])) | {'adios2'})
    if hints:
        extras['mpiio_hints'] = dict(hints)
    return env


def local_stacks(base):
    """The gate's environments of this machine, from the `mpi-gnu` environment ``base``."""
    ompio, romio = ('OMPI_MCA_io', 'ompio'), ('OMPI_MCA_io', 'romio321')
    return [
        _derive(base, 'mpi-gnu-ompio', [ompio]),
        _derive(base, 'mpi-gnu-romio', [romio]),
        _derive(base, 'mpi-gnu-ompio-2phase', [ompio, ('OMPI_MCA_fcoll', 'two_phase')]),
        _derive(base, 'mpi-gnu-adios2-old', [ompio], adios2=ADIOS2_OTHER),
        # a maintenance window's "new stack" against mpi-gnu-romio: three parts changed at
        # once, MPI-IO back to Open MPI's default, another ADIOS2, a hint (docs/gate.md)
        _derive(base, 'mpi-gnu-next', [ompio], adios2=ADIOS2_OTHER,
                hints={'cb_buffer_size': '1048576'}),
    ]
