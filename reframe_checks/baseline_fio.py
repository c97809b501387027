"""Storage baseline: fio sequential write and read in the directory the iobench checks use.

Why: a night's bandwidth depends on the machine's load as much as on the I/O library. Measuring
the storage with a plain, library-free tool in the same ReFrame run lets postprocess/ report every
library's figure as efficiency = bandwidth / that night's baseline median, and detect regressions
on efficiency.

Measurement (unique files per repetition, deleted outside the timer): per repetition new files `fio_base.rep<k>.<job>`:
  write: fio sequential write, psync, `end_fsync=1` -- fio 3.x counts the final fsync in the job's
         runtime, so the data is on storage inside the timed span;
  read:  fio sequential read of the same files with `invalidate=1` (fio calls posix_fadvise
         POSIX_FADV_DONTNEED on the file before reading; the pages are clean after the fsync so
         they are dropped -- the same method iobench uses on one node). Not O_DIRECT: iobench reads
         through the page cache too, so the baseline measures the same path.
  bytes = fio io_bytes, seconds = io_bytes / fio's bw_bytes (bytes/s, fio's own figure), raw in
  iob_reps like every other check; the files are deleted after the read, outside the timed span.

A figure that fits:
  - Duration: fio's runtime has millisecond ticks, so a 64 MiB run on fast storage (64 ms here)
    had a few tens of ticks. The job first calibrates: it scales the size per process by the
    measured shortfall (x2..x16, a power of two) from `size_mib` until write and read each last 1.3 x
    `min_seconds` (nightly 1 s: <= 0.1 % tick error; quick 0.25 s, to stay quick); sanity wants
    each phase's median repetition to last `min_seconds`: when they fall short (this VM ran the
    calibration at 570 ms and the repetitions after it at 235 ms), the repetitions run again at
    the size scaled by that shortfall, up to 3 times. Capped at
    `max_size_mib`; the size used is in the provenance and in fio_size.txt. `-S min_seconds=0`
    runs `size_mib` as given.
  - Shape: `ranks` fio processes (numjobs, group_reporting: one aggregate figure) on one node,
    one per BenchIO rank count of the system (iobench_lib/matrix.py: 1, 2, 8 on `local`; 2 and a
    full node of 128 on the sites) in the nightly; the quick suite runs the largest quick count.
    postprocess divides a run by the baseline of its own session, phase and rank count, and
    shows efficiency only where such a baseline exists (postprocess/history/store.py).

Coupling: none. It is an ordinary test with tags quick/nightly/baseline; postprocess joins it to the
other checks by session (same ReFrame run), phase and ranks. It does not need to run first (the
join is by session, not order); a site that wants it first can run `--tag baseline` before the
suite in the same nightly job, which the session grouping (runs < 3 h apart) also joins.
"""
import json
import os
import shlex
import shutil
import time

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import (parameter, performance_function, run_after, run_before,
                                   sanity_function, variable)

from contract.perflog import PHASES
from iobench_lib import matrix, results, scratch

MiB = 2 ** 20
# fio's JSON: "runtime" (ms) of the "write" or "read" section; awk, as compute nodes may lack python
RUNTIME_MS = ("awk -v p='\"{phase}\" : {{' 'index($0, p) {{s = 1}} s && /\"runtime\"/ "
              "{{gsub(/[^0-9]/, \"\"); print; exit}}' {file}")


@rfm.simple_test
class BaselineFio(rfm.RunOnlyRegressionTest):
    descr = 'storage baseline: fio sequential write (end_fsync) and read (invalidate=1)'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    num_tasks = 1
    time_limit = '20m'

    #: fio processes on the node (numjobs): one per BenchIO rank count of the system.
    ranks = parameter(matrix.rank_menu(), type=int)
    #: quick: the largest quick rank count only, phases >= 0.25 s; nightly: every count, >= 1 s.
    suite = parameter(['quick', 'nightly'], type=str)
    #: MiB per process and phase to start the calibration from (or to run, min_seconds=0).
    size_mib = variable(int, value=64)
    #: Each phase must last at least this long (s); 0: no calibration; None: by suite.
    min_seconds = variable(float, type(None), value=None)
    #: Calibration cap, MiB per process.
    max_size_mib = variable(int, value=65536)
    #: fio block size (bs).
    block = variable(str, value='1M')
    #: Repetitions (each a fio run on its own files).
    repeat = variable(int, value=3)
    #: fio executable.
    fio = variable(str, value='fio')

    iob_params = variable(str, value='')
    iob_reps = variable(str, value='')
    iob_provenance = variable(str, value='')

    @run_after('init')
    def set_tags(self):
        self.skip_if(self.suite == 'quick' and self.ranks != matrix.largest_quick_ranks(),
                     f'ranks={self.ranks}: the quick baseline runs at the largest quick rank count')
        self.tags = {'baseline', self.suite}
        if self.min_seconds is None:
            self.min_seconds = 0.25 if self.suite == 'quick' else 1.0

    @run_after('setup')
    def set_key_and_skip(self):
        self.skip_if(shutil.which(self.fio) is None, f'{self.fio!r} not found on PATH')
        self.skip_if(self.size_mib < 1 or self.repeat < 1 or self.min_seconds < 0,
                     'size_mib and repeat must be >= 1, min_seconds >= 0')
        size = f'{self.size_mib}MiB' if self.min_seconds == 0 else f'min{self.min_seconds:g}s'
        self.iob_params = (f'backend=fio,bs={self.block},mode=seq,pattern=fio,ranks={self.ranks},'
                           f'size={size},stripe=default')
        root = self.current_partition.extras.get('scratch')
        self.data_dir = (os.path.join(root, f'ioregress-fio-{self.hashcode}-{os.getpid()}-'
                                            f'{int(time.time())}')
                         if root else os.path.join(self.stagedir, 'data'))

    def _fio(self, phase, k, size='${size}'):
        extra = '--end_fsync=1' if phase == 'write' else '--invalidate=1'
        return (f'{self.fio} --name={phase} --directory={shlex.quote(self.data_dir)} '
                f'--filename_format=fio_base.rep{k}.\\$jobnum --rw={phase} {extra} '
                f'--ioengine=psync --bs={self.block} --size={size}M --numjobs={self.ranks} '
                f'--group_reporting --output-format=json --output=fio_{phase}.rep{k}.json')

    def _grow(self, need):
        """Bash: size x the shortfall t -> need (ms), rounded up to a power of two (x2..x16): the
        sizes a calibration can pick are few (64, 128, 256... MiB), so fio's level does not move
        with every night's slightly different calibration (320, 384, 448 MiB did here)."""
        return (f'  f=2; while (( t > 0 && f * t < {need} && f < 16 )); do f=$(( f * 2 )); done; '
                f'(( t > 0 )) || f=16; '
                f'size=$(( size * f > {self.max_size_mib} ? {self.max_size_mib} : size * f ))')

    @run_before('run')
    def write_script(self):
        # fio is not an MPI program: run it directly on the allocated node.
        self.job.launcher = getlauncher('local')()
        d = shlex.quote(self.data_dir)
        lines = ['set -e', f'mkdir -p {d}',
                 f'printf "%s\\n" {shlex.quote(scratch.marker_text(self.display_name))} '
                 f'> {d}/{scratch.MARKER}', f'{self.fio} --version', f'size={self.size_mib}']
        if self.min_seconds > 0:
            # write+read at $size until both last 1.3 x min_seconds (the margin keeps the
            # repetitions above min_seconds on a noisy node); scale by the shortfall (_grow)
            need = int(self.min_seconds * 1300)
            ms = lambda ph: RUNTIME_MS.format(phase=ph, file=f'fio_{ph}.repcal.json')  # noqa: E731
            lines += [f'for try in 1 2 3 4 5 6 7 8; do',
                      f'  {self._fio("write", "cal")}', f'  {self._fio("read", "cal")}',
                      f'  rm -f {d}/fio_base.repcal.*',
                      f'  w=$({ms("write")}); r=$({ms("read")}); t=$(( w < r ? w : r ))',
                      f'  if (( t >= {need} || size >= {self.max_size_mib} )); then break; fi',
                      self._grow(need), 'done']
        # the repetitions themselves must last min_seconds: a node that was slow during the
        # calibration and fast after it (2x here) gets them again at a larger size (up to 3 times)
        reps = [c for k in range(self.repeat)
                for c in (self._fio('write', k), self._fio('read', k), f'rm -f {d}/fio_base.rep{k}.*')]
        median = lambda ph: (f'$(for k in {" ".join(map(str, range(self.repeat)))}; do '  # noqa: E731
                             + RUNTIME_MS.format(phase=ph, file=f'fio_{ph}.rep$k.json')
                             + f'; done | sort -n | sed -n {self.repeat // 2 + 1}p)')
        need = int(self.min_seconds * 1000)
        lines += ['for attempt in 1 2 3; do'] + [f'  {c}' for c in reps] + [
            f'  w={median("write")}; r={median("read")}; t=$(( w < r ? w : r ))',
            f'  if (( t >= {need} || size >= {self.max_size_mib} || attempt == 3 )); then break; fi',
            self._grow(need * 13 // 10), 'done', 'echo "size_mib=$size" > fio_size.txt', f'rm -rf {d}']
        with open(os.path.join(self.stagedir, 'baseline_fio.sh'), 'w') as fp:
            fp.write('\n'.join(lines) + '\n')
        self.executable = 'bash'
        self.executable_opts = ['baseline_fio.sh']

    def _reps(self, phase, raw=False):
        """[(bytes, seconds)] per repetition: seconds = io_bytes / fio's bw_bytes (raw: runtime ms)."""
        reps = []
        for k in range(self.repeat):
            with open(os.path.join(self.stagedir, f'fio_{phase}.rep{k}.json')) as fp:
                job = json.load(fp)['jobs'][0][phase]
            nbytes = int(job['io_bytes'])
            reps.append((nbytes, job['runtime'] if raw else nbytes / float(job['bw_bytes'])))
        return reps

    def _size_used(self):
        try:
            with open(os.path.join(self.stagedir, 'fio_size.txt')) as fp:
                return int(fp.read().split('=')[1])
        except (OSError, ValueError, IndexError):
            return None

    @run_after('run')
    def fill_log_fields(self):
        try:
            reps = {p: self._reps(p) for p in PHASES}
        except (OSError, ValueError, KeyError, IndexError, ZeroDivisionError):
            return      # sanity reports the missing/bad output
        self.iob_reps = ';'.join(f'{p}=' + ','.join(f'{b}:{s!r}' for b, s in r)
                                 for p, r in reps.items())
        with open(os.path.join(self.stagedir, str(self.stdout))) as fp:
            version = (fp.read().split() or ['unknown'])[0]
        self.iob_provenance = results.compact_json({
            'tool': version, 'sync_method': 'fio end_fsync=1 (in runtime)',
            'cache_defeat': 'fio invalidate=1 (posix_fadvise_dontneed)', 'dir': self.data_dir,
            'size_mib_per_process': self._size_used(), 'numjobs': self.ranks,
            'min_seconds': self.min_seconds, 'seconds': 'io_bytes / fio bw_bytes',
            'command': f'{self.fio} --rw=write|read --ioengine=psync --bs={self.block} '
                       f'--size={self._size_used()}M --numjobs={self.ranks} --group_reporting',
            'system': self.current_system.name,
            'partition': self.current_partition.fullname, 'environ': self.current_environ.name,
        })

    @sanity_function
    def all_bytes_moved(self):
        files = [os.path.join(self.stagedir, f'fio_{p}.rep{k}.json')
                 for p in PHASES for k in range(self.repeat)]
        missing = [f for f in files if not os.path.exists(f)]
        if missing:
            return sn.assert_false(missing, msg=f'fio output missing: {missing[0]}')
        size = self._size_used()
        expected = (size or 0) * MiB * self.ranks
        moved = [b for p in PHASES for b, _ in self._reps(p)]
        # the median repetition of each phase lasts min_seconds (calibrated to 1.3 x that)
        short = [sorted(ms for _, ms in self._reps(p, raw=True))[self.repeat // 2]
                 for p in PHASES]
        short = [ms for ms in short if ms < 1000 * self.min_seconds]
        capped = size is not None and size >= self.max_size_mib
        return sn.all([sn.assert_found(r'fio-\d', self.stdout),
                       sn.assert_eq(moved, [expected] * len(moved),
                                    msg=f'fio moved {{0}} bytes, expected {expected} each'),
                       sn.assert_true(not short or capped,
                                      msg=f'median fio runs of {short} ms, shorter than '
                                          f'min_seconds={self.min_seconds:g} after calibration'),
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
