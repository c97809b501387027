"""A Slurm site to copy: `cp configs/systems/example_slurm.py configs/systems/<name>.py`, then
change what the comments marked SITE name (docs/site.md "The first week").

Two partitions on the same nodes: `compute` builds iobench with CMake against the site's modules,
`compute-spack` takes it from a Spack environment (spack_env/systems/<name>/spack.yaml, start from
spack_env/systems/archer2). Jobs go through sbatch and srun; whole nodes (`processor` below).

From the environment of whoever runs the nightly (cron or the CI runner), so the file holds no
one's budget:
  IOREGRESS_ACCOUNT      sbatch --account (the budget the node-hours are charged to)
  IOREGRESS_QOS          sbatch --qos
  IOREGRESS_RESERVATION  sbatch --reservation (a standing nightly reservation, if the site gives one)
  IOREGRESS_SCRATCH      the data directory on the file system under test (each check makes and
                         removes a directory in it); default $SCRATCH/ioregress
`python -m postprocess cost --system example-slurm` says what a night asks of the queue.
"""
import os

import ioregress_env

_scratch = ioregress_env.get('IOREGRESS_SCRATCH') or (
    os.path.join(os.environ['SCRATCH'], 'ioregress') if os.environ.get('SCRATCH') else None)
_sbatch = [f'--{opt}={os.environ[var]}' for opt, var in (
    ('account', 'IOREGRESS_ACCOUNT'), ('qos', 'IOREGRESS_QOS'),
    ('reservation', 'IOREGRESS_RESERVATION')) if os.environ.get(var)]

# SITE: the stripe menu of the Lustre scratch (lfs setstripe -c COUNT -S SIZE as c<COUNT>-S<SIZE>;
# 'default' is the directory's own). A GPFS site keeps ['default'] and drops the 'lustre' feature.
_STRIPES = ['default', 'c1-S1M', 'c4-S4M', 'c-1-S1M']
# SITE: whole-node rank counts for the scaling checks (1, 2, 4, 8 nodes of 128 cores here).
_RANKS = [128, 256, 512, 1024]
# BenchIO's shapes: quick = a 2-rank smoke, nightly = one full node (128 = 8x4x4: the 3-D pattern).
_SHAPES = {'quick': {'sizes': [64], 'ranks': [2]}, 'nightly': {'sizes': [256], 'ranks': [128]}}
_EXTRAS = {'scratch': _scratch, 'stripes': _STRIPES, 'lfs': 'lfs', 'rank_counts': _RANKS,
           'benchio_shapes': _SHAPES, 'scaling_stripes': ['default', 'c-1-S1M'],
           # variables each run records as read on the node: a change is named under a finding
           'provenance_env': ['MPICH_MPIIO_HINTS', 'ROMIO_HINTS']}

_PARTITION = {
    'scheduler': 'slurm',
    'launcher': 'srun',
    'access': ['--partition=standard'] + _sbatch,       # SITE: the Slurm partition
    'max_jobs': 8,                  # jobs queued at once: the QoS's per-user limit, or fewer
    'time_limit': '1h',             # for checks that set none (iobench checks set 10 min / 2 h)
    'features': ['lustre'],         # SITE: 'gpfs' for Storage Scale, neither for NFS
    'processor': {'num_cpus': 128},  # SITE: cores per node (whole nodes, min(ranks, cores) per node)
}

site_configuration = {
    'systems': [{
        'name': 'example-slurm',                    # SITE: the system's name (--system NAME)
        'descr': 'Example Slurm cluster (copy and edit)',
        'hostnames': [r'^example-login\d+$'],      # SITE: the login nodes' host names
        'modules_system': 'lmod' if os.environ.get('LMOD_CMD') else 'nomod',
        'partitions': [
            dict(_PARTITION, name='compute', descr='iobench built with CMake and the modules',
                 environs=['gnu', 'gnu-darshan'],
                 extras=dict(_EXTRAS, iobench_build='cmake', nightly_budget={'cases': 500})),
            dict(_PARTITION, name='compute-spack', descr='iobench from the Spack environment',
                 environs=['spack'],
                 extras=dict(_EXTRAS, iobench_build='spack', build_jobs=8,
                             spack_env='spack_env/systems/example-slurm',
                             spack_setup=['module load spack'],       # SITE: how spack gets on PATH
                             nightly_budget={'cases': 300})),
        ],
    }],
    'environments': [
        {   # SITE: the modules of the MPI, parallel HDF5, ADIOS2 and SIONlib the users use
            'name': 'gnu', 'target_systems': ['example-slurm:compute'],
            'modules': ['gcc', 'openmpi', 'hdf5-parallel', 'adios2'],
            'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
            'features': ['mpi', 'hdf5', 'adios2'],
            'extras': {'cmake_options': ['-DIOBENCH_WITH_SIONLIB=OFF']},
        },
        {   # the same stack with Darshan: each check's log, the index and diffs (docs/darshan.md)
            'name': 'gnu-darshan', 'target_systems': ['example-slurm:compute'],
            'modules': ['gcc', 'openmpi', 'hdf5-parallel', 'darshan-runtime'],
            'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
            'features': ['mpi', 'hdf5', 'darshan'],
            # SITE: libdarshan.so when no module preloads it (LD_PRELOAD per job)
            'extras': {'darshan_lib': ioregress_env.get('IOREGRESS_DARSHAN_LIB') or '',
                       'cmake_options': ['-DIOBENCH_WITH_ADIOS2=OFF', '-DIOBENCH_WITH_SIONLIB=OFF']},
        },
        {   # the Spack environment brings HDF5, ADIOS2, SIONlib; the compiler and MPI are externals
            'name': 'spack', 'target_systems': ['example-slurm:compute-spack'],
            'modules': ['gcc', 'openmpi'],
            'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
            'features': ['mpi', 'hdf5', 'adios2', 'sionlib'],
        },
    ],
}
