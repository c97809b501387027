"""`local-slurm`: this machine through the one-node Slurm that ci/slurm/start.sh runs on loopback.

Same machine, libraries and `mpi-gnu` environment as `local` (detected by iobench_lib/installed.py),
but every test is a real Slurm batch job: submitted with sbatch, polled with sacct (slurmdbd +
MariaDB), launched with srun. Its hostname pattern never matches, so `local` keeps every host and this system is chosen
only with `--system local-slurm` (ci/nightly.sh, tests/test_slurm.py).

Launcher: srun with PMIx (SLURM_MPI_TYPE below, the same as MpiDefault in ci/slurm/slurm.conf.in):
Debian's OpenMPI 4.1 speaks only PMIx to srun. `mpirun` inside the allocation works too, but with
srun each rank set is a Slurm job step, so time limits, signals and accounting cover the ranks
themselves, as on a production cluster.
Environment variables: IOREGRESS_SLURM_PARTITION (default batch), plus those of
iobench_lib/installed.py.
"""
import ioregress_env
from iobench_lib import installed

_partition = ioregress_env.get('IOREGRESS_SLURM_PARTITION')

site_configuration = {
    'systems': [
        {
            'name': 'local-slurm',
            'descr': 'This machine via the one-node Slurm of ci/slurm/start.sh (sbatch + srun/PMIx)',
            # Never matched by hostname: select with --system local-slurm.
            'hostnames': ['^never-match-local-slurm$'],
            'partitions': [
                {
                    'name': 'batch',
                    'descr': f'Slurm partition {_partition} (node localhost, all cores)',
                    'scheduler': 'slurm',
                    'launcher': 'srun',
                    'access': [f'--partition={_partition}'],
                    'environs': ['mpi-gnu'],
                    # 2 cores: two I/O tests at once would measure each other.
                    'max_jobs': 1,
                    # Used when a check sets none; must stay within the partition's MaxTime
                    # (EnforcePartLimits=ALL rejects longer requests at submit time).
                    'time_limit': '10m',
                    'features': [],
                    'env_vars': [
                        ['SLURM_MPI_TYPE', 'pmix'],
                        ['OMPI_ALLOW_RUN_AS_ROOT', '1'],
                        ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1'],
                    ],
                    'extras': installed.this_machine_extras(),
                }
            ],
        }
    ],
    'environments': [installed.mpi_gnu_environment('local-slurm')],
}
