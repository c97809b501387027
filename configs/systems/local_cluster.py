"""`local-cluster`: this machine as a small multi-node cluster, through `ci/slurm/start.sh --nodes N`.

Each node (iorn1..iornN) is a slurmd in its own network and UTS namespace with its own hostname and
address on a bridge (10.219.19.0/24) that start.sh makes; jobs span nodes for real: srun places ranks
on several slurmd, OpenMPI's ranks on different nodes talk over TCP on that bridge only (the
OMPI_MCA_* below), and MPI_COMM_TYPE_SHARED sees one node per namespace. The nodes share this
machine's kernel, file systems and two cores: what this system tests is placement and correctness
across nodes (uneven layouts, reads from another node), not bandwidth.

Placement from the configuration: `processor.num_cpus` states the cores per node, so the checks set
num_tasks_per_node = min(ranks, cores) and exclusive_access (reframe_checks/iobench_lib/base.py):
6 ranks land as 4 + 2 on two nodes. rank_counts: the scaling checks' sweep (1, 1.5 and 2 nodes).
Select with --system local-cluster; its hostname pattern never matches.
Environment: IOREGRESS_SLURM_NODE_CPUS (default 4, as start.sh), plus those of
iobench_lib/installed.py.
"""
import ioregress_env
from iobench_lib import installed

_cores = int(ioregress_env.get('IOREGRESS_SLURM_NODE_CPUS'))
_extras = dict(installed.this_machine_extras(), rank_counts=[_cores, _cores + _cores // 2, 2 * _cores])

site_configuration = {
    'systems': [
        {
            'name': 'local-cluster',
            'descr': 'This machine as namespaced Slurm nodes (ci/slurm/start.sh --nodes N)',
            'hostnames': ['^never-match-local-cluster$'],
            'partitions': [
                {
                    'name': 'cluster',
                    'descr': 'Slurm partition cluster: nodes iorn1..iornN, one network+UTS namespace each',
                    'scheduler': 'slurm',
                    'launcher': 'srun',
                    'access': ['--partition=cluster'],
                    'environs': ['mpi-gnu'],
                    'max_jobs': 1,
                    'time_limit': '10m',
                    'processor': {'num_cpus': _cores},
                    'features': [],
                    'env_vars': [
                        ['SLURM_MPI_TYPE', 'pmix'],
                        # a rank that dies ends the step at once instead of leaving the rest in MPI
                        ['SLURM_KILL_BAD_EXIT', '1'],
                        ['OMPI_ALLOW_RUN_AS_ROOT', '1'],
                        ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1'],
                        # ranks on different nodes: TCP over the bridge's subnet only
                        ['OMPI_MCA_btl', 'self,vader,tcp'],
                        ['OMPI_MCA_btl_tcp_if_include', '10.219.19.0/24'],
                        ['OMPI_MCA_btl_tcp_disable_family', '6'],
                    ],
                    'extras': _extras,
                }
            ],
        }
    ],
    'environments': [installed.mpi_gnu_environment('local-cluster')],
}
