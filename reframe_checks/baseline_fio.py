"""Storage baseline: fio sequential write and read in the directory the iobench checks use.

Why: a night's bandwidth depends on the machine's load as much as on the I/O library. Measuring
the storage with a plain, library-free tool in the same ReFrame run lets postprocess/ report every
library's figure as efficiency = bandwidth / that night's baseline median, and detect regressions
on efficiency (bench/detection.py shows this removes most load-driven false alarms).

Measurement (DESIGN.md rules): per repetition a new file `fio_base.rep<k>`:
  write: fio sequential write, psync, `end_fsync=1` -- fio 3.x counts the final fsync in the job's
         runtime, so the data is on storage inside the timed span;
  read:  fio sequential read of the same file with `invalidate=1` (fio calls posix_fadvise
         POSIX_FADV_DONTNEED on the file before reading; the pages are clean after the fsync so
         they are dropped -- the same method iobench uses on one node). Not O_DIRECT: iobench reads
         through the page cache too, so the baseline measures the same path.
  bytes = fio io_bytes, seconds = fio runtime (ms resolution: keep sizes >= 64 MiB), raw in
  iob_reps like every other check; the file is deleted after its read, outside the timed span.

Coupling: none. It is an ordinary test with tags quick/nightly/baseline; postprocess joins it to the
other checks by session (same ReFrame run) and phase. It does not need to run first (the join is by
session, not order); a site that wants it first can run `--tag baseline` before the suite in the
same nightly job, which the session grouping (runs < 3 h apart) also joins.
"""
import json
import os
import shlex
import shutil
import time

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import performance_function, run_after, run_before, sanity_function
from reframe.core.builtins import variable

MiB = 2 ** 20


@rfm.simple_test
class BaselineFio(rfm.RunOnlyRegressionTest):
    descr = 'storage baseline: fio sequential write (end_fsync) and read (invalidate=1)'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'quick', 'nightly', 'baseline'}
    num_tasks = 1
    time_limit = '10m'

    #: Bytes per repetition and phase, in MiB.
    size_mib = variable(int, value=64)
    #: fio block size (bs).
    block = variable(str, value='1M')
    #: Repetitions (each a fio process on its own file).
    repeat = variable(int, value=3)
    #: fio executable.
    fio = variable(str, value='fio')

    iob_params = variable(str, value='')
    iob_reps = variable(str, value='')
    iob_provenance = variable(str, value='')

    @run_after('setup')
    def set_key_and_skip(self):
        self.skip_if(shutil.which(self.fio) is None, f'{self.fio!r} not found on PATH')
        self.skip_if(self.size_mib < 1 or self.repeat < 1, 'size_mib and repeat must be >= 1')
        self.iob_params = (f'backend=fio,bs={self.block},mode=seq,pattern=fio,ranks=1,'
                           f'size={self.size_mib}MiB,stripe=default')
        scratch = self.current_partition.extras.get('scratch')
        self.data_dir = (os.path.join(scratch, f'ioregress-fio-{self.hashcode}-{os.getpid()}-'
                                               f'{int(time.time())}')
                         if scratch else os.path.join(self.stagedir, 'data'))

    @run_before('run')
    def write_script(self):
        # fio is not an MPI program: run it directly on the allocated node.
        self.job.launcher = getlauncher('local')()
        common = (f'--ioengine=psync --bs={self.block} --size={self.size_mib}M '
                  f'--output-format=json')
        lines = ['set -e', f'mkdir -p {shlex.quote(self.data_dir)}', f'{self.fio} --version']
        for k in range(self.repeat):
            path = shlex.quote(os.path.join(self.data_dir, f'fio_base.rep{k}'))
            lines += [f'{self.fio} --name=write --filename={path} --rw=write --end_fsync=1 '
                      f'{common} --output=fio_write.rep{k}.json',
                      f'{self.fio} --name=read --filename={path} --rw=read --invalidate=1 '
                      f'{common} --output=fio_read.rep{k}.json',
                      f'rm -f {path}']
        lines.append(f'rmdir {shlex.quote(self.data_dir)} 2>/dev/null || true')
        with open(os.path.join(self.stagedir, 'baseline_fio.sh'), 'w') as fp:
            fp.write('\n'.join(lines) + '\n')
        self.executable = 'bash'
        self.executable_opts = ['baseline_fio.sh']

    def _reps(self, phase):
        reps = []
        for k in range(self.repeat):
            with open(os.path.join(self.stagedir, f'fio_{phase}.rep{k}.json')) as fp:
                job = json.load(fp)['jobs'][0]
            reps.append((int(job[phase]['io_bytes']), job[phase]['runtime'] / 1000.0))
        return reps

    @run_after('run')
    def fill_log_fields(self):
        try:
            reps = {p: self._reps(p) for p in ('write', 'read')}
        except (OSError, ValueError, KeyError, IndexError):
            return      # sanity reports the missing/bad output
        self.iob_reps = ';'.join(f'{p}=' + ','.join(f'{b}:{s!r}' for b, s in r)
                                 for p, r in reps.items())
        with open(os.path.join(self.stagedir, str(self.stdout))) as fp:
            version = (fp.read().split() or ['unknown'])[0]
        self.iob_provenance = json.dumps({
            'tool': version, 'sync_method': 'fio end_fsync=1 (in runtime)',
            'cache_defeat': 'fio invalidate=1 (posix_fadvise_dontneed)', 'dir': self.data_dir,
            'command': f'{self.fio} --rw=write|read --ioengine=psync --bs={self.block} '
                       f'--size={self.size_mib}M', 'system': self.current_system.name,
            'partition': self.current_partition.fullname, 'environ': self.current_environ.name,
        }, separators=(',', ':'), sort_keys=True).replace('|', '\\u007c')

    @sanity_function
    def all_bytes_moved(self):
        expected = self.size_mib * MiB
        files = [os.path.join(self.stagedir, f'fio_{p}.rep{k}.json')
                 for p in ('write', 'read') for k in range(self.repeat)]
        missing = [f for f in files if not os.path.exists(f)]
        if missing:
            return sn.assert_false(missing, msg=f'fio output missing: {missing[0]}')
        moved = [b for p in ('write', 'read') for b, _ in self._reps(p)]
        return sn.all([sn.assert_found(r'fio-\d', self.stdout),
                       sn.assert_eq(moved, [expected] * len(moved),
                                    msg=f'fio moved {{0}} bytes, expected {expected} each'),
                       sn.assert_false(os.path.exists(self.data_dir),
                                       msg=f'data directory left behind: {self.data_dir}')])

    def _median_bw(self, phase):
        vals = sorted(b / s / MiB for b, s in self._reps(phase))
        mid = len(vals) // 2
        return vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])

    @performance_function('MiB/s')
    def write_bw(self):
        return self._median_bw('write')

    @performance_function('MiB/s')
    def read_bw(self):
        return self._median_bw('read')
