"""What the machine and its software were, per run: a mixin of IOBenchBase (extension `machine`).

Recorded in ``iob_provenance`` under ``machine`` (docs/CONTRACT.md section 3), so that a red night
can say what changed since the last good one (postprocess/why/):

* on the compute node, in the job script right before iobench (a few shell commands into
  ``machine.txt``, never failing the job): the kernel (``uname -r``), the load average, the
  filesystem of the data directory (``findmnt``: mount point, type, options; for ext4 whether it
  has a journal; ``df``: fullness),
  the Lustre client version and ``lfs df`` of the mount on ``+lustre``, and the environment
  variables the system configuration names in the partition's extras ``provenance_env``;
* on the frontend: the job's node list (ReFrame's ``job.nodelist``), the number of other jobs
  running on the partition when the scheduler is Slurm (``squeue``, before submission), the
  sha256 of the Spack lock iobench was built from, the test's output directory (where its
  Darshan log is kept) and the site note of the session (``ci/nightly.sh --note``, exported
  as ``IOREGRESS_NOTE``).
"""
import hashlib
import os
import pathlib
import shlex
import subprocess

import ioregress_env

FILE = 'machine.txt'
NOTE_ENV = 'IOREGRESS_NOTE'
_SQUEUE_TIMEOUT = 20
_REPO = pathlib.Path(__file__).resolve().parents[2]


def probe_commands(run_dir, env_names=(), lustre=False, lfs='lfs'):
    """Shell lines that append ``key<TAB>value`` records to machine.txt (all errors ignored)."""
    d = shlex.quote(run_dir)
    rec = f'>> {FILE} 2>/dev/null'
    lines = [f': > {FILE}',
             f'printf "kernel\\t%s\\n" "$(uname -r)" {rec}',
             f'printf "load\\t%s\\n" "$(cut -d" " -f1-3 /proc/loadavg)" {rec}',
             f'printf "mount\\t%s\\n" "$(findmnt -n -o TARGET,FSTYPE,SOURCE,OPTIONS -T {d})" {rec}',
             f'printf "df\\t%s\\n" "$(df -Pk {d} | tail -n 1)" {rec}',
             # ext4 without a journal skips recently freed inodes at create time (docs/local-fs.md)
             f'j=/sys/fs/ext4/$(basename "$(findmnt -n -o SOURCE -T {d})")/journal_task',
             f'[ -r "$j" ] && printf "journal\\t%s\\n" "$(cat "$j")" {rec}']
    if lustre:
        lines += [f'printf "lustre_client\\t%s\\n" "$(lctl get_param -n version 2>/dev/null '
                  f'| head -n 1 || cat /sys/fs/lustre/version)" {rec}',
                  f'{shlex.quote(lfs)} df {d} 2>/dev/null | sed "s/^/lfs_df\\t/" {rec}']
    for name in env_names:
        lines.append(f'printf "env\\t%s=%s\\n" {shlex.quote(name)} "${{{name}-}}" {rec}')
    return [' ; '.join(lines) + ' ; true']


def parse_probe(text):
    """machine.txt -> the provenance dict (empty values dropped)."""
    out, env, lfs_df = {}, {}, []
    for line in text.splitlines():
        key, _, value = line.partition('\t')
        value = value.strip()
        if not value:
            continue
        if key == 'env':
            name, _, val = value.partition('=')
            env[name] = val
        elif key == 'lfs_df':
            lfs_df.append(value)
        elif key == 'df':
            fields = value.split()
            # Filesystem 1024-blocks Used Available Capacity Mounted-on
            if len(fields) >= 6 and fields[1].isdigit():
                out['df'] = {'size_kib': int(fields[1]), 'used_kib': int(fields[2]),
                             'avail_kib': int(fields[3]), 'used': fields[4],
                             'mounted_on': fields[5]}
        elif key == 'load':
            try:
                out['load'] = [float(x) for x in value.split()[:3]]
            except ValueError:
                out['load'] = value
        elif key == 'mount':
            parts = value.split(None, 3)
            out['mount'] = dict(zip(('target', 'fstype', 'source', 'options'), parts))
        elif key == 'journal':   # ext4's journal_task: "<none>", or the pid of its jbd2 thread
            journal = 'none' if value == '<none>' else 'yes'
            out.setdefault('mount', {})['journal'] = journal
        else:
            out[key] = value
    if env:
        out['env'] = env
    if lfs_df:
        out['lfs_df'] = _lfs_summary(lfs_df)
    return out


def _lfs_summary(lines):
    """`lfs df` of the mount: the filesystem summary line and the fullest OST."""
    summary, fullest = None, None
    for line in lines:
        f = line.split()
        if len(f) < 5 or not f[4].endswith('%'):
            continue
        if f[0].startswith('filesystem'):
            summary = f[4]
        elif '[OST:' in line:
            pct = int(f[4].rstrip('%') or 0)
            if fullest is None or pct > fullest[1]:
                fullest = (f[0], pct)
    out = {'used': summary} if summary else {}
    if fullest:
        out['fullest_ost'] = f'{fullest[0]} {fullest[1]}%'
    return out or {'raw': lines[:3]}


def running_jobs(partition_access):
    """Jobs running on the Slurm partition (``-p``/``--partition`` of the access options, else
    the whole cluster), or a sentence why unknown."""
    part = None
    for i, opt in enumerate(partition_access):
        if opt.startswith('--partition='):
            part = opt.split('=', 1)[1]
        elif opt in ('-p', '--partition') and i + 1 < len(partition_access):
            part = partition_access[i + 1]
        elif opt.startswith('-p') and len(opt) > 2:
            part = opt[2:]
    cmd = ['squeue', '-h', '-t', 'R', '-o', '%i'] + (['-p', part] if part else [])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_SQUEUE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f'unknown ({type(err).__name__})'
    if proc.returncode != 0:
        return f'unknown (squeue status {proc.returncode})'
    return sum(1 for line in proc.stdout.splitlines() if line.strip())


def lock_hash(build_provenance, repo):
    """sha256 (first 16 hex digits) of the Spack lock iobench was built from, or None."""
    env = (build_provenance or {}).get('spack_env')
    if not env:
        return None
    path = os.path.join(env if os.path.isabs(env) else os.path.join(repo, env), 'spack.lock')
    try:
        with open(path, 'rb') as fp:
            return hashlib.sha256(fp.read()).hexdigest()[:16]
    except OSError:
        return None


class MachineState:
    """IOBenchBase extension `machine` (hooks as in base.py's docstring)."""

    _machine_jobs = None

    def machine_skip_reason(self):
        return None

    def machine_iobench_args(self):
        return []

    def machine_prepare(self, run_dir):
        # not in a dry run: nothing runs, and squeue without a reachable controller waits ~2 s a job
        if (self.current_partition.scheduler.registered_name in ('slurm', 'squeue')
                and not self.is_dry_run()):
            self._machine_jobs = running_jobs(list(self.current_partition.access))
        extras = self.current_partition.extras
        return probe_commands(run_dir, extras.get('provenance_env', []),
                              'lustre' in self.current_partition.features,
                              extras.get('lfs', 'lfs'))

    def machine_sanity(self):
        return []

    def machine_perf_values(self):
        return {}

    def machine_provenance(self):
        try:
            with open(os.path.join(self.stagedir, FILE), encoding='utf-8', errors='replace') as fp:
                prov = parse_probe(fp.read())
        except OSError:
            prov = {'probe': f'no {FILE}'}
        try:
            nodes = list(self.job.nodelist or [])
        except AttributeError:
            nodes = []
        if nodes:
            prov['nodelist'] = nodes
        if self._machine_jobs is not None:
            prov['other_jobs'] = self._machine_jobs
        lock = lock_hash(getattr(self.iobench_build, 'build_provenance', {}), str(_REPO))
        if lock:
            prov['spack_lock'] = lock
        prov['outputdir'] = self.outputdir      # where kept files (the Darshan log) end up
        note = (ioregress_env.get(NOTE_ENV) or '').strip()
        if note:
            prov['note'] = note
        return prov
