"""IOBenchBase: the mechanics every iobench check shares. Checks only declare parameters.

A check subclasses IOBenchBase and declares parameters (see reframe_checks/benchio.py):
- `io`: 'backend:mode' strings (or set the variables `backend` and `mode` directly);
- `size`, `ranks`, `stripe`: parameters here with defaults, redeclare them to widen the matrix;
  `-P size=32,64` on the command line works because each is declared with `type=`.
The base class then
- depends on IOBenchBuild (build.py, scope 'environment': one build per partition+environment);
- skips, with the reason, a backend the build lacks or the environment has no feature for, and
  whatever the Darshan/Lustre mixins refuse (stripe != 'default' without +lustre, ...);
- runs `iobench ... --json result.json` under the partition's MPI launcher, data in a run dir
  under the partition's scratch (extras 'scratch') or the stage directory, marked with
  scratch.MARKER before any data and removed by postrun (what iobench left is listed first);
- checks sanity from the JSON (status ok, verified, bytes of every repetition, files deleted)
  and from that listing (nothing left in the run dir, whatever the rank count);
- reports write/read bandwidth (median MiB/s), access-only bandwidth, open and close times (s);
- fills iob_params / iob_reps / iob_provenance for the perflog (docs/CONTRACT.md section 3);
- takes references from configs/references/<system>.yaml via ReFrame's {'$ref': ..}
  (contract/reference_file.py).

Mixin hook points (darshan.py, lustre.py, machine.py): <ext>_skip_reason at setup, <ext>_prepare and
<ext>_iobench_args before run, <ext>_sanity at sanity, <ext>_perf_values at performance,
<ext>_provenance after the run. Another extension = another mixin + its name in EXTENSIONS.
"""
import os
import pathlib
import shlex
import time

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (fixture, parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import PerformanceError, ReframeError, SanityError

from contract import reference_file

from . import processes, results, scaling, scratch
from .build import IOBenchBuild
from .darshan import DarshanCapture
from .lustre import LustreStripe, stripe_menu
from .machine import MachineState

REPO = pathlib.Path(__file__).resolve().parents[2]
EXTENSIONS = ('darshan', 'lustre', 'machine')
# Backends that need a library feature on the environment (or partition).
BACKEND_FEATURE = {'hdf5': 'hdf5', 'adios2': 'adios2', 'sionlib': 'sionlib'}
# A check's time limit by suite unless it sets its own or `-S time_limit=` does (the nightly's
# knob for node-hours: `python -m postprocess cost` reads it here, docs/site.md).
TIME_LIMITS = {'quick': '10m', 'nightly': '2h'}


class IOBenchBase(rfm.RunOnlyRegressionTest, DarshanCapture, LustreStripe, MachineState):
    valid_systems = ['*']
    valid_prog_environs = ['+mpi']

    iobench_build = fixture(IOBenchBuild, scope='environment')

    #: Local edge n of the benchio block (n*n*n doubles per rank) or the pattern's size unit.
    size = parameter([32], type=int)
    #: MPI ranks (num_tasks).
    ranks = parameter([2], type=int)
    #: Stripe setting name from the partition's menu ('default' = leave the filesystem alone).
    stripe = parameter(stripe_menu(), type=str)

    #: iobench --backend (a check's `io` parameter 'backend:mode' sets it and `mode`).
    backend = variable(str, value='')
    #: iobench --mode.
    mode = variable(str, value='')
    #: iobench --pattern.
    pattern = variable(str, value='benchio')
    #: Repetitions in one iobench process; None: quick_repeat or nightly_repeat by suite.
    repeat = variable(int, type(None), value=None)
    #: 5, not 3: the quick suite's bandwidth-bound checks carry the common factor, and their
    #: median of 3 moved 10-40 % between nights on a disk with bursts (docs/verdicts.md)
    quick_repeat = variable(int, value=5)
    nightly_repeat = variable(int, value=10)
    #: iobench launches whose repetitions make one measurement, each in its own run directory:
    #: for a figure that moves more from process to process than from night to night
    #: (processes.py; MDEmptyFiles). Stripe 'default' only.
    processes = variable(int, value=1)
    #: Sizes up to this are the `quick` suite, larger ones `nightly`.
    quick_max_size = variable(int, value=64)
    #: MPI-IO hints (--hint KEY=VALUE) and backend/pattern knobs (--param KEY=VALUE).
    hints = variable(typ.Dict[str, str], value={})
    params = variable(typ.Dict[str, str], value={})
    #: Names of the check's own parameters passed as --param NAME=VALUE (e.g. HACC's `layout`).
    param_parameters = variable(typ.List[str], value=[])
    #: Menu stripes at quick sizes too (scaling checks: nightly whatever their size).
    stripes_at_quick = variable(bool, value=False)
    #: Keep the data files (iobench --keep); sanity then does not demand their deletion.
    keep_data = variable(bool, value=False)
    #: Reference file; None: configs/references/<system>.yaml (absent = record, assert nothing).
    reference_file = variable(str, type(None), value=None)

    #: Logged in every perflog line (docs/CONTRACT.md section 3).
    iob_params = variable(str, value='')
    iob_reps = variable(str, value='')
    iob_provenance = variable(str, value='')

    #: 'quick' or 'nightly' (suite_of(): from size and quick_max_size), set at init.
    iob_suite = 'quick'
    #: The parsed result document after the run (None if missing); mixins read it.
    iob_result = None
    iob_docs = []       # each process's document (processes.py)
    _iob_refs = (None, None)

    def suite_of(self):
        """'quick' or 'nightly': sizes up to quick_max_size are quick (BenchIO asks its shapes)."""
        return 'quick' if isinstance(self.size, int) and self.size <= self.quick_max_size else 'nightly'

    # ---- init: names, tags, tasks ------------------------------------------------------------
    @run_after('init')
    def set_from_parameters(self):
        io = getattr(self, 'io', None)
        if io:
            self.backend, _, self.mode = io.partition(':')
        for name in self.param_parameters:
            self.params = {**self.params, name: str(getattr(self, name))}
        self.num_tasks = self.ranks
        feature = BACKEND_FEATURE.get(self.backend)
        if feature and self.valid_prog_environs == ['+mpi']:
            # an environment without the library is not a case at all (not in -l, not in the
            # budget); a partition-level feature is still honoured by skip_unsupported
            self.valid_prog_environs = [f'+mpi +{feature}']
        self.iob_suite = self.suite_of()
        quick = self.iob_suite == 'quick'
        self.tags = self.tags | {self.iob_suite, self.backend}
        if self.repeat is None:
            self.repeat = self.quick_repeat if quick else self.nightly_repeat
        if self.time_limit is None:
            self.time_limit = TIME_LIMITS[self.iob_suite]
        self.descr = (f'iobench {self.backend}/{self.mode} {self.pattern} size={self.size} '
                      f'ranks={self.ranks} stripe={self.stripe}')

    @run_after('init')
    def one_stripe_for_processes(self):
        # the other processes' directories are made plainly (processes.py): no stripe set there
        if self.processes > 1 and self.stripe != 'default':
            raise ReframeError(f'processes={self.processes} with stripe {self.stripe!r}: '
                               f'several processes run at stripe default only')

    @run_after('init')
    def drop_quick_stripes(self):
        # The quick suite is a smoke test: a stripe from the system's menu runs at nightly sizes
        # only (skipped here at init, so ReFrame leaves it out of -l). -P stripe=X off the menu
        # still reaches setup, where lustre.py says why it cannot run.
        self.skip_if(self.iob_suite == 'quick' and not self.stripes_at_quick
                     and self.stripe != 'default'
                     and self.stripe in stripe_menu(),
                     f'stripe {self.stripe}: menu stripes run at nightly sizes only')

    # ---- setup: skips, regression key, references ------------------------------------------
    def _features(self):
        return set(self.current_partition.features) | set(self.current_environ.features)

    @run_after('setup')
    def skip_unsupported(self):
        feature = BACKEND_FEATURE.get(self.backend)
        self.skip_if(feature is not None and feature not in self._features(),
                     f'backend {self.backend}: feature +{feature} not on '
                     f'{self.current_partition.fullname} / {self.current_environ.name}')
        # A dry run builds nothing, so the backend list is empty: generate the scripts anyway.
        self.skip_if(not self.is_dry_run() and self.backend not in self.iobench_build.backends,
                     f'backend {self.backend} not in this iobench build '
                     f'(has: {" ".join(self.iobench_build.backends)})')
        for ext in EXTENSIONS:
            reason = getattr(self, f'{ext}_skip_reason')()
            self.skip_if(reason is not None, reason)

    @run_after('setup')
    def set_references(self):
        self.iob_params = results.params_key(self.backend, self.mode, self.pattern, self.ranks,
                                             self.size, self.stripe, self.params, self.hints)
        path = self.reference_file or str(
            REPO / 'configs' / 'references' / f'{self.current_system.name}.yaml')
        if self.reference_file is None and not os.path.exists(path):
            return   # no reference file for this system: record figures, assert nothing
        try:
            data = reference_file.load(path)
        except reference_file.ReferenceFileError as err:
            raise ReframeError(str(err)) from None
        self._iob_refs = (path, data)
        self.reference = {'$ref': os.path.abspath(path)}

    @run_after('setup')
    def set_placement(self):
        scaling.place_on_whole_nodes(self, self.current_partition)

    # ---- run ---------------------------------------------------------------------------------
    def _run_dir(self):
        root = self.current_partition.extras.get('scratch')
        if root:
            return os.path.join(root, f'ioregress-{self.hashcode}-{os.getpid()}-{int(time.time())}')
        return os.path.join(self.stagedir, 'data')

    @run_before('run')
    def set_command(self):
        self.iob_run_dir = self._run_dir()
        self.executable = self.iobench_build.iobench_path
        opts = ['--backend', self.backend, '--mode', self.mode, '--pattern', self.pattern,
                '--size', str(self.size), '--dir', self.iob_run_dir, '--phase', 'both',
                '--repeat', str(self.repeat), '--verify', '--json', 'result.json']
        if self.keep_data:
            opts.append('--keep')
        # the environment's MPI-IO hints (extras 'mpiio_hints': a stack's default hints,
        # docs/gate.md), then the check's own, which win
        hints = {**(self.current_environ.extras.get('mpiio_hints') or {}), **self.hints}
        for key, val in sorted(hints.items()):
            opts += ['--hint', f'{key}={val}']
        params = dict(self.params)
        if 'gpfs' in self.current_partition.features:   # docs/site.md: a cache posix_fadvise cannot drop
            params.setdefault('pagepool', '1')
        for key, val in sorted(params.items()):
            opts += ['--param', f'{key}={val}']
        dirs = processes.run_dirs(self.iob_run_dir, self.processes)
        # the marker before any data: the next nightly's sweep (scratch.py) removes a run dir
        # a killed job left behind, and only directories that carry it
        marker = shlex.quote(scratch.marker_text(self.display_name))
        prerun = [cmd for d in map(shlex.quote, dirs)
                  for cmd in (f'mkdir -p {d}', f'printf "%s\\n" {marker} > {d}/{scratch.MARKER}')]
        for ext in EXTENSIONS:
            opts += getattr(self, f'{ext}_iobench_args')()
            prerun += getattr(self, f'{ext}_prepare')(self.iob_run_dir) or []
        # run dir and striping first, then whatever the check itself asked for
        self.prerun_cmds = prerun + list(self.prerun_cmds)
        self.executable_opts = [shlex.quote(o) for o in opts]
        # the other processes right after the job's own launch, before anything is listed
        launches = processes.extra_launches(self._launch_command(), self.executable, opts, dirs,
                                            self.darshan_log if self.darshan_capture else None)
        self.postrun_cmds = launches + list(self.postrun_cmds)
        if self.darshan_capture:    # the other processes' logs, beside the first's
            self.keep_files = self.keep_files + [processes.log_name(os.path.basename(self.darshan_log), i)
                                                 for i in range(1, self.processes)]
        if not self.keep_data:
            # iobench deletes its files; what it left is listed for sanity, then the run dir goes
            listing = '; '.join(f'(cd {d} && find . -mindepth 1 ! -name {scratch.MARKER} | sort)'
                                for d in map(shlex.quote, dirs))
            self.postrun_cmds += [f'{{ {listing}; }} > {scratch.LEFTOVER} 2>/dev/null',
                                  'rm -rf ' + ' '.join(map(shlex.quote, dirs))]
        self.keep_files = self.keep_files + [processes.json_name(i) for i in range(self.processes)]

    def _launch_command(self):
        # the launch run() emits for the job itself (-np ...): it sets these job fields there,
        # after this hook, to the same values
        job = self.job
        job.num_tasks, job.num_tasks_per_node = self.num_tasks, self.num_tasks_per_node
        job.num_tasks_per_core, job.num_tasks_per_socket = (self.num_tasks_per_core,
                                                            self.num_tasks_per_socket)
        job.num_cpus_per_task, job.use_smt = self.num_cpus_per_task, self.use_multithreading
        return job.launcher.run_command(job)

    # ---- after the run: result document, perflog fields ------------------------------------
    @run_before('sanity')
    def read_result(self):
        self.iob_docs = [results.load(os.path.join(self.stagedir, processes.json_name(i)))
                         for i in range(self.processes)]
        self.iob_result = processes.merge(self.iob_docs)
        doc = self.iob_result
        prov = {'system': self.current_system.name, 'partition': self.current_partition.fullname,
                'environ': self.current_environ.name, 'stripe': self.stripe,
                'build': self.iobench_build.build_provenance,
                'launcher': self.job.launcher.run_command(self.job)}
        if doc is not None:
            self.iob_reps = results.reps_string(doc)
            prov.update(results.provenance(doc))
        for ext in EXTENSIONS:
            prov[ext] = getattr(self, f'{ext}_provenance')()
        self.iob_provenance = results.compact_json(prov)

    def _leftover_problems(self):
        # every rank's files, whatever the rank count: the run dir itself, not iobench's list
        if self.keep_data:
            return []
        try:
            with open(os.path.join(self.stagedir, scratch.LEFTOVER)) as fp:
                left = [ln.strip() for ln in fp if ln.strip()]
        except OSError:
            return [f'{scratch.LEFTOVER} missing: postrun did not list the run directory']
        return [f'{len(left)} entries left in the run directory by iobench: {", ".join(left[:3])}'] \
            if left else []

    def _stderr_tail(self, lines=3):
        try:
            with open(os.path.join(self.stagedir, str(self.stderr))) as fp:
                return ' / '.join(ln.strip() for ln in fp.readlines()[-lines:] if ln.strip())
        except OSError:
            return ''

    @sanity_function
    def iobench_sanity(self):
        found = []
        for i, doc in enumerate(self.iob_docs):     # each process's own document
            said = results.problems(doc, backend=self.backend, mode=self.mode,
                                    pattern=self.pattern, ranks=self.ranks,
                                    exitcode=self.job.exitcode, keep=self.keep_data,
                                    stderr_tail=self._stderr_tail())
            found += [f'process {i}: {p}' for p in said] if self.processes > 1 else said
        if self.iob_result is not None:
            for ext in EXTENSIONS:
                found += getattr(self, f'{ext}_sanity')()
        found += self._leftover_problems()
        if found:
            raise SanityError('; '.join(found))
        return sn.defer(True)

    def _index_value(self, name):
        special = {'$system': self.current_system.name, '$partition': self.current_partition.fullname,
                   '$environ': self.current_environ.name,
                   '$system:$partition': self.current_partition.fullname}
        return special[name] if name in special else getattr(self, name)

    @run_before('performance')
    def require_reference_entry(self):
        # ReFrame's own require_reference wants an entry for every performance variable; ours
        # wants one entry per measurement series and asserts the variables that entry lists.
        path, data = self._iob_refs
        if reference_file.require_reference(data) and reference_file.lookup(
                data, type(self).__name__, self._index_value) is None:
            raise PerformanceError(f'{path}: no reference entry for {type(self).__name__} '
                                   f'{self.current_partition.fullname} {self.iob_params} '
                                   f'(the file says require_reference: true)')

    @run_before('performance')
    def set_perf_variables(self):
        values = results.perf_values(self.iob_result) if self.iob_result else {}
        for ext in EXTENSIONS:
            values.update(getattr(self, f'{ext}_perf_values')())
        self.perf_variables = {name: sn.make_performance_function(sn.defer(val), unit)
                               for name, (val, unit) in values.items()}
