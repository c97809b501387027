"""The jobs a suite submits, as ReFrame itself lists them (no model of the matrix of our own).

`reframe -lC --tag T` gives every test case (check, hash, partition, environment) and its fixtures;
`reframe --describe --tag T` gives each check's variables after init (num_tasks, time_limit,
repeat, pattern, size, local); `--show-config systems/0/partitions` the partitions (max_jobs,
cores per node, scratch). A case that is `local` (IORCompare) runs on the login node; its fixture
IORPairs is the job. IOBenchBuild fixtures compile on the login node (ReFrame's build_locally).
"""
import json
import math
import os
import re
import subprocess
from dataclasses import dataclass, field

from postprocess.common.errors import UsageError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = re.compile(r'^\s*(?:- |\^)(?P<check>\w+)(?P<params>.*?) /(?P<hash>[0-9a-f]{8}) '
                  r'@(?P<part>[\w-]+):(?P<partition>[\w-]+)\+(?P<env>[\w.-]+)$')


@dataclass
class Job:
    check: str
    hash: str
    partition: str
    environ: str
    tasks: int
    nodes: int
    time_limit_s: float
    repeat: int = 1
    phases: int = 2
    bytes_per_rank: float = 0.0       # one repetition's data (a repetition's files go before the next)
    params: dict = field(default_factory=dict)

    @property
    def node_hours(self):
        return self.nodes * self.time_limit_s / 3600.0


def _reframe(config, system, *args, extra=()):
    cmd = ['reframe', '-C', config, '-c', os.path.join(REPO, 'reframe_checks'), '--system', system,
           '--nocolor', *args, *extra]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                              cwd=os.environ.get('TMPDIR', '/tmp'))
    except FileNotFoundError:
        raise UsageError("reframe not found on PATH (pip install the checkout: docs/site.md)") from None
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        if 'could not find a configuration entry' in text or 'unknown system' in text.lower():
            raise UsageError(f"unknown system '{system}' (no entry in {config})")
        first = next((ln for ln in text.splitlines() if 'error' in ln.lower()), text.strip()[-300:])
        raise UsageError(f"ReFrame cannot list system '{system}': {first.strip()}")
    return proc.stdout


def partitions(config, system):
    """{partition name: its configuration} (ReFrame's --show-config)."""
    text = _reframe(config, system, '--show-config', 'systems/0/partitions')
    start = text.find('[')
    parts = json.JSONDecoder().raw_decode(text[start:])[0] if start >= 0 else []
    return {p['name']: p for p in parts}


def cores_per_node(part):
    return ((part.get('processor') or {}).get('num_cpus')) or None


def nodes_for(tasks, tasks_per_node, part):
    """Whole nodes as the checks place them (iobench_lib/scaling.py place_on_whole_nodes:
    min(ranks, cores) per node); a partition stating no cores: one node, the scheduler's default."""
    per_node = tasks_per_node or cores_per_node(part)
    return max(1, math.ceil(tasks / per_node)) if per_node else 1


def bytes_per_rank(desc):
    """One repetition's data per rank, by iobench pattern (docs/CONTRACT.md §1, src/pattern_*.c)."""
    pattern, size = desc.get('pattern'), desc.get('size') or 0
    if pattern == 'benchio':
        return 8.0 * size ** 3                      # n x n x n doubles per rank
    if pattern == 'hacc':
        return 72.0 * size                          # 9 variables of 8 bytes per particle
    if pattern == 'ior':
        return size * 2.0 ** 20 * (desc.get('segments') or 1)     # block (MiB) per segment
    if pattern == 'mdfiles':
        return 0.0 if desc.get('@class') == 'MDEmptyFiles' else 307200.0 * size   # filesize default
    if pattern == 'nektar':
        # `size` elements over all ranks, ~196 coefficients of 8 bytes each (the large case)
        return 196 * 8.0 * size / max(1, desc.get('num_tasks') or 1)
    if pattern == 'mddatasets':
        return 8.0 * size * 100                     # at most nvars=100 datasets of n doubles
    if desc.get('@class') == 'BaselineFio':
        # calibrated from size_mib up by x2..x16 per step: one step's largest, per fio process
        return 2.0 ** 20 * 16 * (desc.get('size_mib') or 0) * (desc.get('ranks') or 1)
    return 0.0


def jobs(config, system, tag, extra=()):
    """Every scheduler job of `reframe -r --tag TAG` on the system, one Job each."""
    from iobench_lib.ior_pairs import IORPairs
    parts = partitions(config, system)
    listing = _reframe(config, system, '-lC', '--tag', tag, extra=extra)
    described = json.loads(_reframe(config, system, '--describe', '--tag', tag, extra=extra) or '[]')
    by_hash = {d['hashcode']: d for d in described}
    out, seen = [], set()
    for line in listing.splitlines():
        m = CASE.match(line)
        if not m:
            continue
        key = (m['hash'], m['partition'], m['env'])
        if key in seen:
            continue            # a fixture shared by several cases is one job
        seen.add(key)
        part = parts.get(m['partition'], {})
        params = dict(p[1:].split('=', 1) for p in m['params'].split() if p.startswith('%'))
        desc = by_hash.get(m['hash'])
        if m['check'] == 'IORPairs':
            ranks = int(params['ranks'])
            desc = {'pattern': 'ior', 'size': 64, 'segments': 2, 'num_tasks': ranks}
            tasks, limit, repeat = ranks, _seconds(IORPairs.JOB_TIME_LIMIT), 6   # 3 pairs
        elif desc is None or desc.get('local') or desc.get('@class') == 'IOBenchBuild':
            continue            # builds and login-node checks: no compute job
        else:
            tasks = desc.get('num_tasks') or 1
            limit = desc.get('time_limit') or _seconds(part.get('time_limit') or '0s')
            repeat = desc.get('repeat') or 1
        out.append(Job(m['check'], m['hash'], m['partition'], m['env'], tasks,
                       nodes_for(tasks, desc.get('num_tasks_per_node'), part), float(limit),
                       repeat=repeat, bytes_per_rank=bytes_per_rank(desc), params=params))
    if not out:
        raise UsageError(f"ReFrame lists no job for system '{system}' with --tag {tag}")
    return out, parts


def _seconds(text):
    """ReFrame's time strings ('30m', '2h', '1h30m', '90s') in seconds."""
    units = {'d': 86400, 'h': 3600, 'm': 60, 's': 1}
    found = re.findall(r'(\d+(?:\.\d+)?)([dhms])', str(text))
    if not found:
        raise ValueError(f'not a time limit {text!r}')
    return sum(float(n) * units[u] for n, u in found)
