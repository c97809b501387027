"""Darshan capture for iobench runs: a mixin (RegressionTestPlugin) of IOBenchBase.

When the partition or environment has the feature ``+darshan``, every iobench run is captured:
the ranks (not the launcher) get ``LD_PRELOAD=<libdarshan.so>`` through an ``env`` wrapper in front
of iobench (works with mpirun, srun, ...), ``DARSHAN_LOGFILE`` names an exact file in the stage
directory, kept with the outputs. The library comes from the extras 'darshan_lib' (system config;
local.py fills it from $IOREGRESS_DARSHAN_LIB), else ``spack location -i darshan-runtime``.
If the site already preloads Darshan (LD_PRELOAD contains libdarshan, a 'darshan' module, or
iobench linked with it, as Cray's darshan module does) nothing is preloaded again; only
DARSHAN_LOGFILE is set so the site's Darshan writes its log where the check finds it.

Then sanity asserts, from the log (contract/darshan_checks.py), that Darshan saw what iobench
claims: bytes on the data files, collective vs independent MPI-IO, HDF5 datasets, syncs, Lustre
stripes; performance adds Darshan's slowest-rank I/O time and aggregate bandwidth. Without
Darshan the checks run as before and provenance says "no darshan log".

IOBenchBase calls the hooks below at fixed points (contract in base.py's docstring).
"""
import os
import shlex
import shutil
import subprocess

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import variable

from contract import darshan_checks, darshan_facts

LOG_NAME = 'iobench.darshan'


def site_darshan(env_sources, modules, executable):
    """Why Darshan is already active for iobench here (a sentence), or None."""
    for where, env in env_sources:
        preload = env.get('LD_PRELOAD', '')
        if 'libdarshan' in preload:
            return f'site preloads Darshan ({where} LD_PRELOAD={preload})'
    for mod in modules:
        if 'darshan' in str(mod).lower():
            return f'site Darshan module loaded ({mod})'
    try:
        with open(executable, 'rb') as fp:
            blob = fp.read()
        if b'darshan_core_initialize' in blob or b'libdarshan' in blob:
            return f'iobench is linked with Darshan ({executable})'
    except OSError:
        pass
    return None


def exclude_dirs_for(run_dir, env_sources=()):
    """DARSHAN_EXCLUDE_DIRS that lets Darshan see ``run_dir``, or None when the default does.

    Darshan ignores every file under its default exclusions, so data in /dev/shm or /var/tmp
    would leave a log with no POSIX record and nothing to check. Setting the variable replaces
    the whole list, so the others stay. A value the site already set is left alone.
    """
    if any('DARSHAN_EXCLUDE_DIRS' in dict(src) for _, src in env_sources):
        return None
    path = os.path.abspath(run_dir).rstrip('/') + '/'
    if not any(path.startswith(d) for d in darshan_facts.DEFAULT_EXCLUDE_DIRS):
        return None
    return ','.join(d for d in darshan_facts.DEFAULT_EXCLUDE_DIRS if not path.startswith(d))


class DarshanCapture(rfm.RegressionTestPlugin):
    #: Also record DXT traces (DARSHAN_MOD_ENABLE=DXT_POSIX,DXT_MPIIO); bigger logs.
    darshan_dxt = variable(bool, value=False)
    #: Assert on the log (False: capture and report only).
    darshan_assert = variable(bool, value=True)
    #: Relative byte tolerance over the payload; None = per-backend default (contract/darshan_checks.py).
    darshan_bytes_tolerance = variable(float, type(None), value=None)
    #: Requested Lustre stripe (count, size in bytes) to find in the LUSTRE records; the Lustre
    #: mixin sets it when it stripes the run directory.
    darshan_expect_stripe = variable(typ.Tuple[int, int], type(None), value=None)
    #: Darshan's record memory per process in MiB (DARSHAN_MODMEM; its default 4 MiB overflows
    #: with the metadata pattern's thousands of datasets) and for names (DARSHAN_NAMEMEM).
    darshan_modmem_mib = variable(int, value=64)
    darshan_namemem_mib = variable(int, value=16)
    #: Records per module (Darshan's default 1024 per module truncates H5D for 3000 datasets);
    #: written as MAX_RECORDS into a Darshan config file (DARSHAN_CONFIG_PATH) in the stage dir.
    darshan_max_records = variable(int, value=16384)

    darshan_capture = None   # how the log is produced: 'preload', 'site' or None (no capture)
    darshan_note = 'no +darshan feature'
    _darshan_cache = None

    # ---- where libdarshan is -----------------------------------------------------------------
    def _darshan_features(self):
        return set(self.current_partition.features) | set(self.current_environ.features)

    def darshan_library(self):
        for extras in (self.current_environ.extras, self.current_partition.extras):
            lib = extras.get('darshan_lib')
            if lib:
                return lib
        if shutil.which('spack'):
            try:
                prefix = subprocess.run(['spack', 'location', '-i', 'darshan-runtime'], capture_output=True,
                                        text=True, timeout=120).stdout.strip()
            except (OSError, subprocess.TimeoutExpired):
                prefix = ''
            if prefix and os.path.isfile(os.path.join(prefix, 'lib', 'libdarshan.so')):
                return os.path.join(prefix, 'lib', 'libdarshan.so')
        return None

    @property
    def darshan_log(self):
        return os.path.join(self.stagedir, LOG_NAME)

    # ---- hooks called by IOBenchBase --------------------------------------------------------
    def darshan_skip_reason(self):
        return None

    def darshan_prepare(self, run_dir):
        if 'darshan' not in self._darshan_features():
            self.darshan_note = 'no +darshan feature on this partition/environment'
            return []
        env_sources = [('environment', os.environ),
                       ('partition', dict(self.current_partition.local_env.env_vars)),
                       ('environ', dict(self.current_environ.env_vars)), ('check', dict(self.env_vars))]
        site = site_darshan(env_sources, list(self.current_environ.modules)
                            + list(self.current_partition.local_env.modules), self.executable)
        env = [f'DARSHAN_LOGFILE={self.darshan_log}',
               # keep one record per rank for shared files: bytes and time per rank for triage
               'DARSHAN_DISABLE_SHARED_REDUCTION=1',
               f'DARSHAN_MODMEM={self.darshan_modmem_mib}', f'DARSHAN_NAMEMEM={self.darshan_namemem_mib}']
        conf = os.path.join(self.stagedir, 'darshan.conf')
        with open(conf, 'w') as fp:
            fp.write(f'MAX_RECORDS {self.darshan_max_records} POSIX,MPI-IO,H5F,H5D,STDIO\n')
        env.append(f'DARSHAN_CONFIG_PATH={conf}')
        exclude = exclude_dirs_for(run_dir, env_sources) if run_dir else None
        if exclude:
            env.append(f'DARSHAN_EXCLUDE_DIRS={exclude}')
        if self.darshan_dxt:
            env.append('DARSHAN_MOD_ENABLE=DXT_POSIX,DXT_MPIIO')
        if site:
            self.darshan_capture, self.darshan_note = 'site', site + '; not preloaded again'
        else:
            lib = self.darshan_library()
            if not lib or not os.path.isfile(lib):
                self.darshan_note = f'+darshan but libdarshan.so not found ({lib})'
                return []
            self.darshan_capture, self.darshan_note = 'preload', f'LD_PRELOAD={lib} on the ranks'
        # `env` runs on every rank under the launcher, so only the ranks get LD_PRELOAD; a
        # preload already in the job's environment stays, after Darshan (expanded by the script)
        preload = [f'LD_PRELOAD={shlex.quote(lib)}"${{LD_PRELOAD:+:$LD_PRELOAD}}"'] \
            if self.darshan_capture == 'preload' else []
        self.executable = ' '.join(['env'] + preload + [shlex.quote(e) for e in env]
                                   + [self.executable])
        self.keep_files = self.keep_files + [LOG_NAME, 'darshan.conf']
        return [f'rm -f {shlex.quote(self.darshan_log)}']

    def darshan_iobench_args(self):
        return []

    def _darshan_analysis(self):
        """(facts, verdicts, error) of this run's log, computed once."""
        if self._darshan_cache is None:
            facts = verdicts = error = None
            if self.darshan_capture and os.path.exists(self.darshan_log):
                try:
                    report = darshan_facts.open_log(self.darshan_log)
                    # the log is the first process's (processes.py): judged on its document
                    doc = self.iob_docs[0] if self.iob_docs else self.iob_result
                    files = darshan_facts.files_from_result(doc or {})
                    facts = darshan_facts.log_facts(report, files)
                    tol = None
                    if self.darshan_bytes_tolerance is not None:
                        tol = (self.darshan_bytes_tolerance,
                               darshan_checks.TOLERANCE.get(self.backend, (0, 0))[1])
                    if doc:
                        verdicts = darshan_checks.check_run(facts, doc, tol,
                                                            self.darshan_expect_stripe)
                except darshan_facts.DarshanLogError as err:
                    error = str(err)
            elif self.darshan_capture == 'site':
                # the site's Darshan may ignore DARSHAN_LOGFILE: nothing to assert, not a failure
                self.darshan_note += f'; its log is not at {self.darshan_log}'
            elif self.darshan_capture:
                error = f'Darshan capture on but no log at {self.darshan_log} (did iobench reach MPI_Finalize?)'
            self._darshan_cache = (facts, verdicts, error)
        return self._darshan_cache

    def darshan_sanity(self):
        facts, verdicts, error = self._darshan_analysis()
        if not self.darshan_capture or not self.darshan_assert:
            return []
        if error:
            return [error]
        return [f'darshan {v["check"]}: {v["detail"]}' for v in darshan_checks.failures(verdicts or [])]

    def darshan_perf_values(self):
        facts, _, _ = self._darshan_analysis()
        if not facts:
            return {}
        fig = darshan_checks.perf_figures(facts)
        out = {}
        if fig['darshan_bw'] is not None:
            out['darshan_bw'] = (fig['darshan_bw'], 'MiB/s')
        if fig['darshan_io_time'] is not None:
            out['darshan_io_time'] = (fig['darshan_io_time'], 's')
        return out

    def darshan_provenance(self):
        if not self.darshan_capture:
            return {'log': 'no darshan log', 'why': self.darshan_note}
        facts, verdicts, error = self._darshan_analysis()
        prov = {'log': LOG_NAME if os.path.exists(self.darshan_log) else 'no darshan log',
                'capture': self.darshan_note, 'dxt': self.darshan_dxt}
        if facts:
            prov['darshan_version'] = facts['darshan_version']
            prov['verdicts'] = {v['check']: v['ok'] for v in verdicts or []}
        if error:
            prov['error'] = error
        return prov
