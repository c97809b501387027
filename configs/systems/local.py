"""The embedded `local` system: this machine, OpenMPI, the local scheduler, one job at a time.

Its hostname pattern matches every host, so configs/settings.py puts it last. Library features
(+hdf5, +adios2, +sionlib, +darshan) are what _detect.py finds when the configuration is loaded;
`local` never has +lustre. Environment variables that steer detection: IOREGRESS_ADIOS2_DIR,
SIONLIB_ROOT, IOREGRESS_DARSHAN_LIB, IOREGRESS_SCRATCH, IOREGRESS_BUILD.
"""
import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    'ioregress_detect', pathlib.Path(__file__).with_name('_detect.py'))
_detect = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_detect)
_spec = importlib.util.spec_from_file_location(
    'ioregress_stacks', pathlib.Path(__file__).with_name('_stacks.py'))
_stacks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stacks)
_mpi_gnu = _detect.mpi_gnu_environment('local')


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
                    'extras': _detect.this_machine_extras(),
                }
            ],
        }
    ],
    # the stacks `postprocess gate` compares (configs/systems/_stacks.py); in no partition's
    # environs, so the nightly runs mpi-gnu only
    'environments': [_mpi_gnu] + _stacks.local_stacks(_mpi_gnu),
}
