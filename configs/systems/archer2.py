"""ARCHER2 (EPCC, UK national service): HPE Cray EX, Slurm, cray-mpich, Lustre /work.

Sources (public): ARCHER2 user documentation, github.com/ARCHER2-HPC/archer2-docs (commit
7a5396d4, June 2026): docs/user-guide/scheduler.md (partitions, QoS, limits),
docs/user-guide/io.md (Lustre /work, striping, benchio figures), docs/user-guide/data.md
(/work/<project>/<project>/<user>), docs/data-tools/darshan.md (`module load darshan` preloads
Darshan), docs/data-tools/spack.md (`module load other-software spack`, Spack 1.0.2); EPCC's own
ReFrame configuration, github.com/EPCCed/epcc-reframe configuration/archer2.py (hostnames, srun
access options, PrgEnv environments).

Partitions: `compute` builds iobench with CMake against the Cray modules; `compute-spack` runs the
same nodes with iobench from spack_env/systems/archer2 (iobench_build 'spack'). Both are +lustre
and stripe their run directories under $IOREGRESS_SCRATCH (default /work/$IOREGRESS_ACCOUNT/
$IOREGRESS_ACCOUNT/$USER/ioregress). The budget comes from $IOREGRESS_ACCOUNT (sbatch --account);
without it the jobs are submitted without --account and Slurm rejects them with its own message.
"""
import os

import ioregress_env

_account = ioregress_env.get('IOREGRESS_ACCOUNT')
_user = os.environ.get('USER', 'unknown')
_scratch = ioregress_env.get('IOREGRESS_SCRATCH') or (
    f'/work/{_account}/{_account}/{_user}/ioregress' if _account else None)

# Stripe menu (reframe_checks/iobench_lib/lustre.py): ARCHER2's default is 1 stripe of 1 MiB;
# io.md recommends -c 1 for file-per-process and -c -1 (all 12 OSTs of a /work file system) for
# shared files; 4 MiB and 128 MiB test stripe size against per-aggregator data (seed 000).
_STRIPES = ['default', 'c1-S1M', 'c4-S4M', 'c-1-S1M', 'c-1-S128M']

# Scaling checks (--tag scaling, part of nightly) sweep 1, 2, 4 and 8 full nodes of 128 cores.
_RANKS = [128, 256, 512, 1024]

# The bounded nightly (reframe_checks/iobench_lib/matrix.py, docs/site.md "Nightly budget"):
# BenchIO's nightly at one full node (MPI_Dims_create(128, 3) = 8x4x4: the 3-D pattern), the
# quick smoke at 2 ranks; scaling at the default layout (1 OST) and across all OSTs; at most
# `cases` test cases per partition over all its environments (`reframe -lC`, tests/test_budget.py).
_SHAPES = {'quick': {'sizes': [64], 'ranks': [2]}, 'nightly': {'sizes': [256], 'ranks': [128]}}
_SCALING_STRIPES = ['default', 'c-1-S1M']

_COMMON = {
    'scheduler': 'slurm',
    'launcher': 'srun',
    'access': ['--hint=nomultithread', '--distribution=block:block',
               '--partition=standard', '--qos=standard']
              + ([f'--account={_account}'] if _account else []),
    # QoS standard: 24 h maximum walltime, 64 jobs queued / 16 running per user.
    'max_jobs': 16,
    'time_limit': '1h',
    'features': ['lustre'],
    'processor': {'num_cpus': 128, 'num_cpus_per_socket': 64, 'num_sockets': 2},
}

site_configuration = {
    'systems': [
        {
            'name': 'archer2',
            'descr': 'ARCHER2 HPE Cray EX (EPCC)',
            'hostnames': [r'^ln\d+', r'^uan\d+', r'^dvn\d+'],
            # Off-site (--list / --dry-run on a laptop or CI) there is no Lmod to drive.
            'modules_system': 'lmod' if os.environ.get('LMOD_CMD') else 'nomod',
            'partitions': [
                dict(_COMMON, name='compute',
                     descr='Standard compute nodes, iobench built with CMake and Cray modules',
                     environs=['PrgEnv-gnu', 'PrgEnv-cray'],
                     extras={'iobench_build': 'cmake', 'scratch': _scratch,
                             'stripes': _STRIPES, 'lfs': 'lfs', 'rank_counts': _RANKS,
                             'benchio_shapes': _SHAPES, 'scaling_stripes': _SCALING_STRIPES,
                             'nightly_budget': {'cases': 480}}),
                dict(_COMMON, name='compute-spack',
                     descr='Standard compute nodes, iobench from the Spack environment',
                     environs=['spack-gnu'],
                     extras={'iobench_build': 'spack', 'spack_env': 'spack_env/systems/archer2',
                             'spack_setup': ['module load other-software', 'module load spack'],
                             'build_jobs': 8, 'scratch': _scratch,
                             'stripes': _STRIPES, 'lfs': 'lfs', 'rank_counts': _RANKS,
                             'benchio_shapes': _SHAPES, 'scaling_stripes': _SCALING_STRIPES,
                             'nightly_budget': {'cases': 300}}),
            ],
        }
    ],
    'environments': [
        {
            'name': 'PrgEnv-gnu',
            'target_systems': ['archer2'],
            # `darshan` last: ARCHER2's module preloads Darshan into every program of the job;
            # the Darshan mixin sees the module and only points DARSHAN_LOGFILE at the stage dir.
            'modules': ['PrgEnv-gnu', 'cray-hdf5-parallel', 'adios2', 'darshan'],
            'cc': 'cc', 'cxx': 'CC', 'ftn': 'ftn',
            'features': ['mpi', 'hdf5', 'adios2', 'darshan'],
            'extras': {'cmake_options': ['-DIOBENCH_WITH_SIONLIB=OFF']},
        },
        {
            'name': 'PrgEnv-cray',
            'target_systems': ['archer2'],
            'modules': ['PrgEnv-cray', 'cray-hdf5-parallel', 'darshan'],
            'cc': 'cc', 'cxx': 'CC', 'ftn': 'ftn',
            'features': ['mpi', 'hdf5', 'darshan'],
            'extras': {'cmake_options': ['-DIOBENCH_WITH_ADIOS2=OFF', '-DIOBENCH_WITH_SIONLIB=OFF']},
        },
        {
            # The Spack environment brings its own HDF5, ADIOS2, SIONlib and darshan-runtime;
            # PrgEnv-gnu provides the compiler and cray-mpich that spack.yaml lists as externals.
            'name': 'spack-gnu',
            'target_systems': ['archer2:compute-spack'],
            'modules': ['PrgEnv-gnu'],
            'cc': 'cc', 'cxx': 'CC', 'ftn': 'ftn',
            'features': ['mpi', 'hdf5', 'adios2', 'sionlib'],
        },
    ],
}
