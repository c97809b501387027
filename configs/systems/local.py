"""The embedded `local` system: this machine, OpenMPI, the local scheduler, one job at a time.

Its hostname pattern matches every host, so configs/settings.py puts it last. Library features
(+hdf5, +adios2, +sionlib, +darshan) are what iobench_lib/installed.py finds when the configuration
is loaded; `local` never has +lustre. Environment variables that steer detection:
IOREGRESS_ADIOS2_DIR, SIONLIB_ROOT, IOREGRESS_DARSHAN_LIB, IOREGRESS_SCRATCH, IOREGRESS_BUILD.
"""
from iobench_lib import gate_stacks, installed

_mpi_gnu = installed.mpi_gnu_environment('local')


site_configuration = {
    'systems': [
        {
            'name': 'local',
            'descr': 'This machine (OpenMPI via mpirun, local scheduler)',
            'hostnames': ['.*'],
            'max_local_jobs': 1,
            'partitions': [
                {
                    'name': 'default',
                    'descr': 'All cores of this machine',
                    'scheduler': 'local',
                    'launcher': 'mpirun',
                    'environs': ['mpi-gnu'],
                    # 2 cores: running two I/O tests at once would measure each other.
                    'max_jobs': 1,
                    'features': [],
                    # OpenMPI refuses root and more ranks than cores unless told; CI runs as root.
                    'env_vars': [
                        ['OMPI_ALLOW_RUN_AS_ROOT', '1'],
                        ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1'],
                        ['OMPI_MCA_rmaps_base_oversubscribe', '1'],
                    ],
                    'extras': installed.this_machine_extras(),
                }
            ],
        }
    ],
    # the stacks `python -m gate` compares (iobench_lib/gate_stacks.py); in no partition's
    # environs, so the nightly runs mpi-gnu only
    'environments': [_mpi_gnu] + gate_stacks.local_stacks(_mpi_gnu),
}
