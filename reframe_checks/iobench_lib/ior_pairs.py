"""IOR beside iobench: one job runs IOR itself and `iobench --pattern ior` with identical
parameters, alternating, N pairs (reframe_checks/ior_compare.py declares the matrix).

Where IOR comes from, first found wins: the environment's extras 'ior' (path of the binary) or
'ior_root' (<root>/bin/ior), $IOR_ROOT/bin/ior, `ior` on PATH; a Spack partition gets it from its
environment (spack_env/systems/<system>/spack.yaml lists `ior`) through the PATH its job sets up.
No IOR: the pairs fixture is skipped with that reason, and so (ReFrame: "skipped due to skipped
dependencies") is every IORCompare test on it. Nothing is faked.

Measurement, the same for both tools (docs/ior.md): each pair runs each tool as two processes,
write (iobench `--phase write --keep`, IOR `-w -k -e -l o`: fsync inside the timed span, offset
stamps per transfer as iobench's) and read (iobench `--phase read`, IOR `-r -k -C`), with the
files' pages dropped in between by `dd iflag=nocache count=0` (posix_fadvise DONTNEED on the whole
file; the pages are clean after the fsync); iobench's read-only run drops the kept files' pages
again on every node and records what stayed resident, and IOR -C makes each rank read another
node's data when there are several.
Order alternates: iobench first in even pairs, IOR first in odd ones. Figures are the tools' own:
iobench's result JSON (bw_MiBps) and IOR's JSON summary (bwMiB), MiB/s (2^20 bytes/s).
"""
import json
import os
import shlex
import shutil
import statistics
import subprocess

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function, variable

from contract.perflog import PHASES

from . import results, scratch
from .build import IOBenchBuild
from .scaling import place_on_whole_nodes, rank_menu, rank_skip_reason

MiB = 2 ** 20
#: iobench backend:mode -> IOR's arguments for the same API, file mode and collectiveness.
IOR_API = {
    'posix:fpp': ['-a', 'POSIX', '-F'],
    'posix:shared': ['-a', 'POSIX'],
    'mpiio:independent': ['-a', 'MPIIO'],
    'mpiio:collective': ['-a', 'MPIIO', '-c'],
    'hdf5:independent': ['-a', 'HDF5'],
    'hdf5:collective': ['-a', 'HDF5', '-c'],
}
#: IOR's data packet for every pair: offset stamps (-l o). Per transfer IOR then rewrites one word
#: per 4 KiB of its buffer (utilities.c update_write_memory_pattern), the same per-transfer work as
#: iobench --pattern ior; IOR's default (timestamp) rewrites nothing after filling it once.
IOR_PACKET = ['-l', 'o']
TOOLS = ('iobench', 'ior')


def find_ior(extras, environ=os.environ):
    """(path, how) of the IOR binary, or (None, why not)."""
    if extras.get('ior'):
        path = extras['ior']
        return (path, "environment extras 'ior'") if os.access(path, os.X_OK) else (
            None, f"environment extras 'ior' names {path!r}, which is not an executable")
    for root, how in ((extras.get('ior_root'), "environment extras 'ior_root'"),
                      (environ.get('IOR_ROOT'), '$IOR_ROOT')):
        if root:
            path = os.path.join(root, 'bin', 'ior')
            return (path, how) if os.access(path, os.X_OK) else (
                None, f'{how} is {root!r} but {path} is not an executable')
    path = shutil.which('ior', path=environ.get('PATH'))
    if path:
        return path, 'PATH'
    return None, ("no IOR binary: not on PATH, $IOR_ROOT unset, no extras 'ior'/'ior_root' in "
                  "the environment (build IOR from github.com/hpc/ior, or add `ior` to the Spack env)")


def ior_apis(ior):
    """APIs this IOR was built with (from `ior -h`: '-a S  api -- API for I/O [POSIX|MPIIO|...]')."""
    try:
        out = subprocess.run([ior, '-h'], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    text = out.stdout + out.stderr
    start = text.find('API for I/O [')
    return set(text[start + 13:text.find(']', start)].split('|')) if start >= 0 else set()


def pair_script(launch, iobench, ior, io, run_dir, size_mib, transfer, segments, pairs):
    """Shell lines of the alternating pairs (files named <tool>_<phase>.<k>.json in the cwd)."""
    backend, mode = io.split(':')
    q = shlex.quote
    iob = (f'{launch} {q(iobench)} --backend {backend} --mode {mode} --pattern ior '
           f'--param block={size_mib}m --param transfer={transfer} --param segments={segments} '
           f'--dir {q(run_dir)} --name iob_pair --repeat 1 --verify --quiet')
    ior_cmd = (f'{launch} {q(ior)} {" ".join(IOR_API[io])} -b {size_mib}m -t {transfer} '
               f'-s {segments} -e {" ".join(IOR_PACKET)} -o {q(os.path.join(run_dir, "ior_pair.dat"))} '
               '-O summaryFormat=JSON')
    drop = ('for f in {}; do dd if="$f" iflag=nocache count=0 status=none; done')
    steps = {
        'iobench': lambda k: [f'{iob} --phase write --keep --json iobench_write.{k}.json',
                              drop.format(q(run_dir) + '/iob_pair.rep0*'),
                              f'{iob} --phase read --json iobench_read.{k}.json'],
        'ior': lambda k: [f'{ior_cmd} -O summaryFile=ior_write.{k}.json -w -k',
                          drop.format(q(run_dir) + '/ior_pair.dat*'),
                          f'{ior_cmd} -O summaryFile=ior_read.{k}.json -r -k -C',
                          f'rm -f {q(run_dir)}/ior_pair.dat*'],
    }
    lines = ['set -e', f'mkdir -p {q(run_dir)}',
             f'printf "%s\\n" {q(scratch.marker_text("IORPairs"))} > {q(run_dir)}/{scratch.MARKER}',
             f'echo "IOR: {ior}"']
    for k in range(pairs):
        for tool in (TOOLS if k % 2 == 0 else TOOLS[::-1]):
            lines += [f'echo "pair {k}: {tool}"', 'sync'] + steps[tool](k)
    lines.append(f'rm -rf {q(run_dir)}')     # killed before this line: the next nightly's sweep
    return lines


def read_pair(stagedir, tool, phase, k):
    """(bytes, seconds, doc) of one phase of pair k; seconds as the tool computed its bandwidth."""
    with open(os.path.join(stagedir, f'{tool}_{phase}.{k}.json')) as fp:
        doc = json.load(fp)
    if tool == 'iobench':
        rep = doc['repetitions'][0][phase]
        return rep['bytes'], rep['total_s'], doc
    test = doc['tests'][0]
    res = test['Results']
    res = res[0] if isinstance(res[0], list) else res
    p = test['Parameters']
    nbytes = int(p['blockSize']) * int(p['segmentCount']) * int(test['Options']['tasks'])
    return nbytes, nbytes / (res[0]['bwMiB'] * MiB), doc


class IORPairs(rfm.RunOnlyRegressionTest):
    """The job: IOR and iobench --pattern ior alternating, `pairs` times (a fixture of IORCompare)."""
    io = parameter(list(IOR_API), type=str)
    # the smallest and largest rank count (1 and 8 nodes on the sites): iobench against IOR at
    # both ends is the comparison; every count in between is the scaling checks' job (budget)
    ranks = parameter(sorted({min(rank_menu()), max(rank_menu())}), type=int)
    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    iobench_build = fixture(IOBenchBuild, scope='environment')
    #: The job's time limit (a fixture: `postprocess cost` reads it here, --describe omits it).
    JOB_TIME_LIMIT = '30m'

    #: IOR -b in MiB (iobench --param block=<size>m), per rank and segment.
    size = variable(int, value=64)
    #: IOR -t (iobench --param transfer).
    transfer = variable(str, value='1m')
    #: IOR -s (iobench --param segments).
    segments = variable(int, value=2)
    #: Alternating pairs (>= 3).
    pairs = variable(int, value=3)
    ior_path = variable(str, value='')

    @run_after('init')
    def set_tasks(self):
        self.num_tasks = self.ranks
        self.time_limit = self.JOB_TIME_LIMIT

    @run_after('setup')
    def skip_without_ior(self):
        self.skip_if(self.pairs < 3, f'pairs={self.pairs}: at least 3 alternating pairs')
        path, how = find_ior({**self.current_partition.extras, **self.current_environ.extras})
        self.skip_if(path is None, how)
        backend = self.io.split(':')[0]
        feats = set(self.current_partition.features) | set(self.current_environ.features)
        self.skip_if(backend == 'hdf5' and 'hdf5' not in feats,
                     f'backend hdf5: feature +hdf5 not on {self.current_environ.name}')
        self.skip_if(not self.is_dry_run() and backend not in self.iobench_build.backends,
                     f'backend {backend} not in this iobench build')
        api = IOR_API[self.io][1]
        self.skip_if(api not in ior_apis(path), f'IOR at {path} ({how}) was built without {api}')
        reason = rank_skip_reason(self.current_partition, self.ranks)
        self.skip_if(reason is not None, reason)
        self.ior_path = path

    @run_after('setup')
    def set_placement(self):
        # the same placement as the iobench checks: IOR and iobench get the nodes the suite's figures get
        place_on_whole_nodes(self, self.current_partition)

    @run_before('run')
    def write_script(self):
        self.job.num_tasks = self.num_tasks   # ReFrame copies it only in run(): needed now
        launch = self.job.launcher.run_command(self.job)
        scratch = self.current_partition.extras.get('scratch')
        run_dir = (os.path.join(scratch, f'ioregress-iorpairs-{self.hashcode}-{os.getpid()}')
                   if scratch else os.path.join(self.stagedir, 'data'))
        lines = pair_script(launch, self.iobench_build.iobench_path, self.ior_path, self.io, run_dir,
                            self.size, self.transfer, self.segments, self.pairs)
        with open(os.path.join(self.stagedir, 'ior_pairs.sh'), 'w') as fp:
            fp.write('\n'.join(lines) + '\n')
        self.job.launcher = getlauncher('local')()   # the script launches every run itself
        self.executable = 'bash'
        self.executable_opts = ['ior_pairs.sh']
        self.keep_files = [f'{t}_{p}.{k}.json' for t in TOOLS for p in PHASES
                           for k in range(self.pairs)]

    @sanity_function
    def all_pairs_ran(self):
        return sn.all([sn.assert_eq(self.job.exitcode, 0, msg='pair script exited with {0}')] +
                      [sn.assert_true(os.path.exists(os.path.join(self.stagedir, f)),
                                      msg=f'missing {f}') for f in self.keep_files])


class IORCompareBase(rfm.RunOnlyRegressionTest):
    """One tool's series from an IORPairs job: its own perflog line (iob_params ..,tool=<tool>)."""
    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    local = True
    executable = 'true'
    tags = {'ior', 'nightly'}
    iob_params = variable(str, value='')
    iob_reps = variable(str, value='')
    iob_provenance = variable(str, value='')

    def _pair_runs(self):
        return self.pair_runs   # the fixture (declared by the check)

    @run_after('setup')
    def set_key(self):
        p = self._pair_runs()
        backend, mode = p.io.split(':')
        self.iob_params = results.params_key(
            backend, mode, 'ior', p.ranks, p.size, 'default',
            params={'block': f'{p.size}m', 'transfer': p.transfer, 'segments': p.segments,
                    'tool': self.tool})
        self.descr = f'{self.tool}: IOR layout {p.io} ranks={p.ranks} block={p.size}m'

    def _samples(self, tool):
        p = self._pair_runs()
        return {ph: [read_pair(p.stagedir, tool, ph, k) for k in range(p.pairs)] for ph in PHASES}

    @sanity_function
    def pairs_sane(self):
        p = self._pair_runs()
        mine = self._samples(self.tool)
        found = []
        want = p.size * MiB * p.segments * p.ranks
        for phase, samples in mine.items():
            for k, (nbytes, secs, doc) in enumerate(samples):
                if nbytes != want:
                    found.append(f'pair {k} {phase}: {nbytes} bytes, expected {want}')
                if self.tool == 'iobench' and (doc.get('status') != 'ok' or (
                        phase == 'read' and not doc['repetitions'][0]['read'].get('verified'))):
                    found.append(f'pair {k} {phase}: iobench status {doc.get("status")}, '
                                 f'error {doc.get("error")}, not verified')
        self.iob_reps = ';'.join(f'{ph}=' + ','.join(f'{b}:{s!r}' for b, s, _ in mine[ph])
                                 for ph in PHASES)
        first = mine['write'][0][2]
        self.iob_provenance = results.compact_json({
            'tool': self.tool, 'ior': p.ior_path, 'pairs': p.pairs, 'order': 'iobench first in even pairs',
            'command': first.get('command') if self.tool == 'iobench' else first.get('Command line'),
            'cache_defeat': 'separate write/read processes, dd iflag=nocache (posix_fadvise '
                            'DONTNEED) between; IOR -C; iobench read run drops on every node',
            'sync_method': 'IOR -e (fsync in the timed span)' if self.tool == 'ior' else
                           first.get('sync_method'),
            'system': self.current_system.name, 'partition': self.current_partition.fullname,
            'environ': self.current_environ.name})
        return sn.assert_false(found, msg='; '.join(found))

    @run_before('performance')
    def set_perf(self):
        mine, iob, ior = self._samples(self.tool), self._samples('iobench'), self._samples('ior')
        perf = {}
        for ph in PHASES:
            perf[f'{ph}_bw'] = (statistics.median(b / s / MiB for b, s, _ in mine[ph]), 'MiB/s')
        for ph in PHASES:   # the pairs' median ratio, the same on both tools' lines
            ratios = [(b / s) / (ob / os_) for (b, s, _), (ob, os_, _) in zip(iob[ph], ior[ph])]
            perf[f'{ph}_ratio_iobench_ior'] = (statistics.median(ratios), '')
        self.perf_variables = {n: sn.make_performance_function(sn.defer(v), u)
                               for n, (v, u) in perf.items()}
