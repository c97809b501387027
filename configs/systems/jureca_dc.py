"""JURECA-DC (Jülich Supercomputing Centre): Slurm with psslurm, ParaStation MPI / OpenMPI,
IBM Storage Scale (GPFS) file systems on JUST.

Sources (public): JSC system documentation, apps.fz-juelich.de/jsc/hps/jureca/ (batchsystem.html:
Slurm with ParaStation's psslurm instead of slurmd, partitions, `--account` budgets; environment
and file system pages: $SCRATCH on GPFS, module Stages with GCC + ParaStationMPI or OpenMPI and
HDF5/ADIOS2/SIONlib modules). Partition names and limits as documented there
(dc-cpu 24 h, dc-cpu-devel 2 h); verify with `sinfo` after a system change.

GPFS, not Lustre: no +lustre feature and the stripe menu is only 'default', so striped variants
skip with the reason. Data go to $IOREGRESS_SCRATCH, else $SCRATCH/$USER/ioregress (after
`jutil env activate -p <project>`). The budget comes from $IOREGRESS_ACCOUNT (sbatch --account).
Partitions: `dc-cpu` builds iobench with CMake against the Stage's modules; `dc-cpu-spack` uses
spack_env/systems/jureca-dc (JSC provides no central Spack: $IOREGRESS_SPACK_ROOT names one).
"""
import os

import ioregress_env

_account = ioregress_env.get('IOREGRESS_ACCOUNT')
_scratch = ioregress_env.get('IOREGRESS_SCRATCH') or (
    os.path.join(os.environ['SCRATCH'], os.environ.get('USER', 'unknown'), 'ioregress')
    if os.environ.get('SCRATCH') else None)

# Scaling checks (--tag scaling, part of nightly) sweep 1, 2, 4 and 8 full nodes of 128 cores.
_RANKS = [128, 256, 512, 1024]

# The bounded nightly (reframe_checks/iobench_lib/matrix.py, docs/site.md "Nightly budget"):
# BenchIO's nightly at one full node (128 = 8x4x4, the 3-D pattern), the quick smoke at 2 ranks;
# at most `cases` test cases per partition over all its environments (tests/test_budget.py).
_SHAPES = {'quick': {'sizes': [64], 'ranks': [2]}, 'nightly': {'sizes': [256], 'ranks': [128]}}

_COMMON = {
    'scheduler': 'slurm',
    'launcher': 'srun',
    'access': ['--partition=dc-cpu'] + ([f'--account={_account}'] if _account else []),
    'max_jobs': 8,
    'time_limit': '1h',            # dc-cpu allows 24 h
    'features': [],
    'processor': {'num_cpus': 128, 'num_cpus_per_socket': 64, 'num_sockets': 2},
}

site_configuration = {
    'systems': [
        {
            'name': 'jureca-dc',
            'descr': 'JURECA-DC (JSC), GPFS scratch',
            'hostnames': [r'^jrlogin\d+', r'^jrc\d+'],
            # Off-site (--list / --dry-run on a laptop or CI) there is no Lmod to drive.
            'modules_system': 'lmod' if os.environ.get('LMOD_CMD') else 'nomod',
            'partitions': [
                dict(_COMMON, name='dc-cpu',
                     descr='dc-cpu nodes, iobench built with CMake and the Stage modules',
                     environs=['gcc-psmpi', 'gcc-openmpi'],
                     extras={'iobench_build': 'cmake', 'scratch': _scratch,
                             'stripes': ['default'], 'rank_counts': _RANKS,
                             'benchio_shapes': _SHAPES, 'nightly_budget': {'cases': 280}}),
                dict(_COMMON, name='dc-cpu-spack',
                     descr='dc-cpu nodes, iobench from the Spack environment',
                     environs=['spack-gcc'],
                     extras={'iobench_build': 'spack', 'spack_env': 'spack_env/systems/jureca-dc',
                             'build_jobs': 8, 'scratch': _scratch, 'stripes': ['default'],
                             'rank_counts': _RANKS,
                             'benchio_shapes': _SHAPES, 'nightly_budget': {'cases': 150}}),
            ],
        }
    ],
    'environments': [
        {
            'name': 'gcc-psmpi',
            'target_systems': ['jureca-dc'],
            # No Darshan feature: point extras 'darshan_lib' at a libdarshan.so to add it.
            'modules': ['Stages/2025', 'GCC', 'ParaStationMPI', 'HDF5', 'ADIOS2', 'SIONlib'],
            'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
            'features': ['mpi', 'hdf5', 'adios2', 'sionlib'],
        },
        {
            'name': 'gcc-openmpi',
            'target_systems': ['jureca-dc'],
            'modules': ['Stages/2025', 'GCC', 'OpenMPI', 'HDF5'],
            'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
            'features': ['mpi', 'hdf5'],
            'extras': {'cmake_options': ['-DIOBENCH_WITH_ADIOS2=OFF', '-DIOBENCH_WITH_SIONLIB=OFF']},
        },
        {
            'name': 'spack-gcc',
            'target_systems': ['jureca-dc:dc-cpu-spack'],
            'modules': ['Stages/2025', 'GCC', 'ParaStationMPI'],
            'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
            'features': ['mpi', 'hdf5', 'adios2', 'sionlib'],
        },
    ],
}
