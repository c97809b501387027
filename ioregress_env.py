"""Every IOREGRESS_* environment variable of the suite: one table (name, default, meaning, who
reads it) and the getter every Python reader goes through.

A top-level module of its own, importing nothing of the suite, so the system configs, the checks
(iobench_lib), postprocess and the gate all read the environment through it without importing
each other. Shell scripts read their variables themselves; the table names them too, with the
script. docs/operations.md#environment-variables is this table as text (`python3 -m
ioregress_env` prints it); tests/test_environment.py fails when the doc, this table or the tree
disagree, so a variable nobody documented cannot appear.
"""
import os
from typing import NamedTuple, Optional


class Variable(NamedTuple):
    name: str
    default: Optional[str]      # what get() returns when unset or empty (None: nothing)
    meaning: str
    read_by: tuple              # the files (or commands) that read it
    shown: str = ''             # the default in words, when the reader computes it


_V = Variable
VARIABLES = (
    # -- the nightly and its history (ci/nightly.sh, postprocess)
    _V('IOREGRESS_TAG', 'quick', 'which suite the nightly runs (quick, nightly)',
       ('ci/nightly.sh', 'ci/gitlab-ci.yml')),
    _V('IOREGRESS_SYSTEM', None, 'ReFrame system of the nightly', ('ci/nightly.sh', 'ci/gitlab-ci.yml'),
       'picked by hostname'),
    _V('IOREGRESS_CONFIG', None, 'ReFrame configuration file (another checkout\'s, in tests)',
       ('ci/nightly.sh', 'gate/cli.py', 'postprocess/cost/cli.py'), '<repo>/configs/settings.py'),
    _V('IOREGRESS_RESULTS_ROOT', None, 'results tree of the nightly and of `postprocess accept`',
       ('ci/nightly.sh', 'postprocess/accept/cli.py'), '<repo>/results (accept: ./results)'),
    _V('IOREGRESS_RESULTS_DB', None, "ReFrame's results DB of the nightly ('off': none)",
       ('ci/nightly.sh',), '<results>/reframe.db'),
    _V('IOREGRESS_STORE', None, 'results store of the history commands (exported by the nightly)',
       ('postprocess/history/cli.py',)),
    _V('IOREGRESS_THIS_RUN', None, "this run's directory, counted with the store though not in it "
       'yet (exported by the nightly)', ('postprocess/history/cli.py',)),
    _V('IOREGRESS_NOTE', None, 'a note kept with every result of the run (nightly --note)',
       ('reframe_checks/iobench_lib/machine.py', 'ci/nightly.sh')),
    _V('IOREGRESS_CONFIRM_REPEAT', '10', 'repetitions of the confirmation re-run (0: none)',
       ('ci/nightly.sh', 'postprocess/cost/cli.py')),
    _V('IOREGRESS_SWEEP_HOURS', '12', 'age beyond which the nightly sweeps old run data (0: all)',
       ('ci/nightly.sh',)),
    _V('IOREGRESS_NOTIFY', None, 'Apprise URLs told of red nights and of green again',
       ('ci/nightly.sh', 'postprocess/notify/cli.py')),
    _V('IOREGRESS_REPORT_URL', None, 'where the results tree is published (links in messages)',
       ('postprocess/common/address.py',), 'file:// links'),
    _V('IOREGRESS_REPORT_JOBS', None, "processes that draw the report's figures (1: this one)",
       ('postprocess/report/parallel.py',), 'the CPUs, at most 4'),
    _V('IOREGRESS_REPORT', None, "ReFrame's run report file",
       ('configs/settings.py',), '<repo>/results/reports/run-report-{sessionid}.json'),
    _V('IOREGRESS_DUCKDB_MEMORY', '1GB', "memory limit of the results store's DuckDB queries",
       ('postprocess/history/engine.py',)),
    _V('IOREGRESS_DEBUG', None, "1: a command's internal error shows its traceback",
       ('postprocess/common/command.py',)),
    _V('IOREGRESS_RESULTS', None, 'results directory of ci/quick.sh', ('ci/quick.sh',),
       '<repo>/results/quick-<UTC time>'),
    # -- GitLab CI (ci/gitlab-ci.yml, ci/history.sh)
    _V('IOREGRESS_HISTORY_DIR', None, 'persistent results directory of the CI runner',
       ('ci/gitlab-ci.yml',), '$CI_PROJECT_DIR/results'),
    _V('IOREGRESS_RESULTS_BRANCH', None, 'branch the history is restored from and saved to',
       ('ci/history.sh', 'ci/gitlab-ci.yml')),
    _V('IOREGRESS_PUSH_URL', None, 'push URL of the history branch', ('ci/history.sh',)),
    _V('IOREGRESS_PUSH_TOKEN', None, 'token of the history push (masked)', ('ci/history.sh',)),
    _V('IOREGRESS_NIGHTLY_ARGS', None, 'more ci/nightly.sh options of the CI job',
       ('ci/gitlab-ci.yml',)),
    _V('IOREGRESS_ACCEPT_SINCE', None, 'the accept job: accept a change since this night',
       ('ci/gitlab-ci.yml',)),
    _V('IOREGRESS_ACCEPT_REASON', None, 'the accept job: why', ('ci/gitlab-ci.yml',)),
    _V('IOREGRESS_ACCEPT_CHECK', None, 'the accept job: a check regex (empty: every series)',
       ('ci/gitlab-ci.yml',)),
    # -- the machine: systems, builds, data (configs/, iobench_lib, ci/setup.sh)
    _V('IOREGRESS_SCRATCH', None, 'data directory of the checks, on the file system under test',
       ('reframe_checks/iobench_lib/installed.py', 'configs/systems/archer2.py',
        'configs/systems/jureca_dc.py', 'configs/systems/example_slurm.py', 'ci/nightly.sh',
        'bench/real_replay.py'), "each test's stage directory (site systems: their scratch)"),
    _V('IOREGRESS_ACCOUNT', '', 'sbatch --account of a site system',
       ('configs/systems/archer2.py', 'configs/systems/jureca_dc.py',
        'configs/systems/example_slurm.py')),
    _V('IOREGRESS_QOS', None, 'sbatch --qos', ('configs/systems/example_slurm.py',)),
    _V('IOREGRESS_RESERVATION', None, 'sbatch --reservation', ('configs/systems/example_slurm.py',)),
    _V('IOREGRESS_BUILD', 'cmake', 'how iobench is built on the local system (cmake, spack)',
       ('reframe_checks/iobench_lib/installed.py',)),
    _V('IOREGRESS_IOBENCH_DIR', None, 'an iobench built already, used instead of compiling',
       ('reframe_checks/iobench_lib/build.py',)),
    _V('IOREGRESS_SPACK_ROOT', None, 'a Spack checkout put on PATH for Spack builds',
       ('reframe_checks/iobench_lib/spack_build.py', 'gate/spack.py')),
    _V('IOREGRESS_DARSHAN_LIB', None, 'libdarshan.so of Darshan capture',
       ('reframe_checks/iobench_lib/installed.py', 'configs/systems/example_slurm.py')),
    _V('IOREGRESS_ADIOS2_DIR', None, 'ADIOS2 install prefix', ('reframe_checks/iobench_lib/installed.py',),
       'the newest cached adios2-*'),
    _V('IOREGRESS_CACHE', '~/.cache/ioregress', 'where ci/setup.sh builds the tools',
       ('reframe_checks/iobench_lib/installed.py', 'ci/lib/build_common.sh', 'ci/build_adios2.sh')),
    _V('IOREGRESS_SOURCES', None, 'folder of upstream source archives (no download)',
       ('ci/setup.sh', 'ci/lib/build_common.sh', '.ci/run')),
    _V('IOREGRESS_NO_BUILD', '0', '1: ci/setup.sh installs only, builds nothing', ('ci/setup.sh',)),
    _V('IOREGRESS_NO_ADIOS2', '0', '1: ci/setup.sh builds no ADIOS2', ('ci/setup.sh',)),
    _V('IOREGRESS_SLURM_PARTITION', 'batch', 'partition of the local_slurm system',
       ('configs/systems/local_slurm.py',)),
    _V('IOREGRESS_SLURM_NODE_CPUS', '4', 'CPUs each node of the local Slurm declares',
       ('configs/systems/local_cluster.py', 'ci/slurm/start.sh')),
    _V('IOREGRESS_SLURM_TIMEOUT', '60', 'seconds ci/slurm/start.sh waits for an idle node',
       ('ci/slurm/start.sh',)),
    _V('IOREGRESS_SLURM_MAXTIME', '240', 'MaxTime (minutes) of the local Slurm partition',
       ('ci/slurm/start.sh',)),
    _V('IOREGRESS_SLURM_FORCE', '0', '1: replace a slurm.conf ci/slurm/start.sh did not write',
       ('ci/slurm/start.sh',)),
    # -- the tests
    _V('IOREGRESS_ARTIFACTS', None, 'where browser tests copy their screenshots',
       ('tests/test_darshan_index.py', 'tests/test_report_browser.py')),
    _V('IOREGRESS_TOKIO', None, 'the TOKIO-ABC perflogs of tests/test_production_replay.py',
       ('tests/test_production_replay.py',), '../../shared/tokio beside the checkout'),
    _V('IOREGRESS_XDIST_GROUPS', None, 'internal: where pytest-xdist workers write their groups',
       ('tests/conftest.py',)),
)
BY_NAME = {v.name: v for v in VARIABLES}


def get(name, environ=None):
    """The value of ``name`` in ``environ`` (os.environ), or the table's default when it is unset
    or empty. A name not in the table is a KeyError: every variable is documented."""
    variable = BY_NAME[name]
    value = (os.environ if environ is None else environ).get(name)
    return value if value else variable.default


def markdown():
    """The table as docs/operations.md shows it."""
    rows = ['| variable | default | meaning | read by |', '| --- | --- | --- | --- |']
    for v in VARIABLES:
        default = v.shown or ('' if v.default is None else v.default)
        default = f'`{default}`' if default and v.default is not None else default
        readers = ', '.join(f'`{r}`' for r in v.read_by)
        rows.append(f'| `{v.name}` | {default} | {v.meaning} | {readers} |')
    return '\n'.join(rows) + '\n'


if __name__ == '__main__':
    print(markdown(), end='')
