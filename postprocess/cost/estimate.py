"""What a night asks of a site, per partition, from the jobs ReFrame lists (reframe_jobs.py).

Node-hours are at the jobs' time limits: what the scheduler reserves and the most a night can be
charged (checks end earlier; `--results` shows a real night's). The wall-time bound: the jobs in
listing order on `max_jobs` slots, each as long as its limit, without queue waits. The expected
wall time: the bytes the partition's jobs move at the bandwidth the suite gets, plus a fixed
start-up per job in waves of `max_jobs` (both knobs of `cost`; a real night's: `--results`).
"""
import heapq
import math
import os

# Knobs and where they live (also in `cost --help` and docs/site.md "What a night costs"); light:
# `--help` of every command imports this module.
KNOBS = [
    ('check time limit', 'iobench checks 2 h nightly, 10 min quick; BaselineFio 20 min; IORPairs 30 min',
     'reframe_checks/iobench_lib/base.py TIME_LIMITS; ci/nightly.sh ... -- -S time_limit=1h'),
    ('concurrent jobs', "partition 'max_jobs'", 'configs/systems/<name>.py'),
    ('nodes per job', "ranks over the partition's 'processor': {'num_cpus'}",
     "configs/systems/<name>.py 'rank_counts', 'benchio_shapes'"),
    ('confirmation re-run', 'whole runs of the far checks, >= 10 repetitions in all; a group: '
     'the members that fell most', 'IOREGRESS_CONFIRM_REPEAT (0: none)'),
    ('GitLab job limit', '8 h (the nightly job is cancelled after it)', 'ci/gitlab-ci.yml timeout'),
    ('test cases', "at most extras['nightly_budget']", 'configs/systems/<name>.py, tests/test_budget.py'),
]


def schedule_bound(limits, slots):
    """Makespan of jobs (seconds, in order) on ``slots`` parallel slots, each job taking its limit."""
    free = [0.0] * max(1, slots)
    for t in limits:
        heapq.heappush(free, heapq.heappop(free) + t)
    return max(free)


def per_partition(jobs, parts, confirm_repeat, bandwidth=10.0, overhead=60.0):
    """[{partition, jobs, nodes, node_hours, wall_s, scratch_bytes, rows, confirm_*}]"""
    from postprocess.detect.verdict import MAX_GROUP_RERUN
    out = []
    for name in sorted({j.partition for j in jobs}):
        mine = [j for j in jobs if j.partition == name]
        part = parts.get(name, {})
        slots = part.get('max_jobs') or 8          # ReFrame's own default
        confirm = sorted((_runs(j, confirm_repeat) * j.node_hours for j in mine), reverse=True)
        footprints = sorted((j.bytes_per_rank * j.tasks for j in mine), reverse=True)
        moved = [j.bytes_per_rank * j.tasks * j.repeat * j.phases for j in mine]
        out.append({
            'partition': name, 'jobs': len(mine), 'max_jobs': slots,
            'largest_job_nodes': max(j.nodes for j in mine),
            'node_hours': sum(j.node_hours for j in mine),
            'wall_s': schedule_bound([j.time_limit_s for j in mine], slots),
            'moved_bytes': sum(moved),
            'expected_wall_s': sum(moved) / (bandwidth * 2.0 ** 30)
                               + math.ceil(len(mine) / slots) * overhead,
            # the largest max_jobs jobs' data at once (each job holds one repetition's files)
            'scratch_bytes': sum(footprints[:slots]),
            'rows': sum(j.repeat * j.phases for j in mine),
            'confirm_one_node_hours': confirm[0] if confirm_repeat else 0.0,
            'confirm_group_node_hours': sum(confirm[:MAX_GROUP_RERUN]) if confirm_repeat else 0.0,
            'scratch': (part.get('extras') or {}).get('scratch'),
        })
    return out


def _runs(job, repetitions):
    """Whole runs the confirmation makes of a job (postprocess/detect/verdict.py rerun_runs)."""
    return math.ceil(repetitions / max(1, job.repeat)) if repetitions else 0


def measured(results, system):
    """A real night of ``results`` (its latest completed run of the system): wall seconds, job
    seconds summed, store bytes and run-directory bytes; None without one."""
    import json
    runs = os.path.join(results, 'runs')
    done = sorted(d for d in (os.listdir(runs) if os.path.isdir(runs) else [])
                  if f'-{system}-' in d and os.path.exists(os.path.join(runs, d, 'COMPLETE')))
    if not done:
        return None
    run = os.path.join(runs, done[-1])
    with open(os.path.join(run, 'report.json')) as fp:
        report = json.load(fp)
    session = report.get('session_info', {})
    cases = [c for r in report.get('runs', [])[:1] for c in r.get('testcases', [])]
    store = os.path.join(results, 'store', f'system={system}')
    stored = [os.path.join(dp, f) for dp, _, fs in os.walk(store) for f in fs
              if f.endswith('.parquet')]
    return {'run': done[-1], 'wall_s': session.get('time_elapsed'),
            'job_s': sum(c.get('time_run') or 0 for c in cases if not c.get('fail_phase')),
            'store_bytes_per_night': (sum(map(os.path.getsize, stored)) / len(stored)) if stored else None,
            'run_dir_bytes': _du(run)}


def _du(path):
    return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs
               if not os.path.islink(os.path.join(dp, f)))
