"""Simulated run records and histories for the verdict tests: records as postprocess/history reads
a perflog line, fed through the real History and detector (lognormal repetitions, fixed seeds)."""
import datetime
import math

import numpy as np

MiB = 2 ** 20
START = datetime.datetime(2026, 3, 1, 2, 0, tzinfo=datetime.timezone.utc)
BACKENDS = ['posix', 'mpiio', 'hdf5']


def record(when, c, name, params, bandwidths, session=None, mib=16.0):
    """Check number ``c`` (jobid, seconds after ``when``) with {phase: [MiB/s per repetition]},
    each repetition ``mib`` MiB."""
    reps = {phase: [(mib * MiB, mib / b) for b in bw] for phase, bw in bandwidths.items()}
    return {'time': when + datetime.timedelta(seconds=10 * c), 'system': 'sim', 'partition': 'p1',
            'environ': 'gnu', 'check': name, 'params': params,
            'param_dict': dict(kv.split('=') for kv in params.split(',')), 'jobid': str(c),
            'result': 'pass', 'reps': reps, 'provenance': {}, 'perf': {}, 'reframe': '',
            'session': session, 'source': 'test'}


def night_of(i):
    return (START + datetime.timedelta(days=i)).date().isoformat()


# ---- histories of 40 checks + fio, one library (tests/test_verdicts*.py) -------------------------

def runs_for(nights, checks=40, reps=10, cv=0.15, seed=1, factor=lambda night, check, phase: 1.0,
             start=START, session=None, noise_seed=None):
    """Run records of ``checks`` checks + fio for ``nights`` nights (write and read). ``seed``
    fixes the checks' medians (and the noise, unless ``noise_seed``: a re-run's fresh draw)."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    medians = np.exp(rng.uniform(np.log(100), np.log(2000), checks + 1))
    if noise_seed is not None:
        rng = np.random.default_rng(noise_seed)
    out = []
    for night in nights:
        when = start + datetime.timedelta(days=night)
        for c in range(checks + 1):
            params = ('backend=fio,bs=1M,mode=seq,pattern=fio,ranks=1,size=64MiB,stripe=default'
                      if c == 0 else f'backend=posix,mode=fpp,pattern=benchio,ranks=2,size={c}')
            name = 'BaselineFio' if c == 0 else f'Sim %id={c}'
            bws = {}
            for phase in ('write', 'read'):
                bw = medians[c] * factor(night, c, phase) * np.exp(rng.normal(0, sigma, reps))
                bws[phase] = bw
            out.append(record(when, c, name, params, bws, session))
    return out


def flags(findings, night=None):
    return [f for f in findings if f['status'] in ('regression', 'improvement')
            and (night is None or f['night'] == night)]


# ---- histories of three libraries + fio, with night-to-night noise (tests/test_verdicts_stack.py) -

def runs(nights, checks=18, reps=3, cv=0.08, night_cv=0.03, seed=2, factor=None, first_run=1.0):
    """Checks of three libraries (a third each) + fio; lognormal repetitions around a per-series
    night level (night-to-night noise ``night_cv``); ``first_run``: night 0 that much faster."""
    rng = np.random.default_rng(seed)
    sigma, tau = math.sqrt(math.log1p(cv * cv)), math.sqrt(math.log1p(night_cv * night_cv))
    medians = np.exp(rng.uniform(np.log(100), np.log(2000), checks + 1))
    out = []
    for night in nights:
        when = START + datetime.timedelta(days=night)
        for c in range(checks + 1):
            backend = 'fio' if c == 0 else BACKENDS[c % 3]
            params = (f'backend={backend},mode=x,pattern=benchio,ranks=2,size={c}' if c
                      else 'backend=fio,bs=1M,mode=seq,pattern=fio,ranks=1,size=64MiB')
            name = 'BaselineFio' if c == 0 else f'BenchIO %id={c}'
            bws = {}
            for phase in ('write', 'read'):
                level = medians[c] * np.exp(rng.normal(0, tau))
                level *= (factor(night, backend, phase, c) if factor else 1.0)
                level *= first_run if night == 0 else 1.0
                bw = level * np.exp(rng.normal(0, sigma, reps))
                bws[phase] = bw
            out.append(record(when, c, name, params, bws, None))
    return out


def red(findings, night):
    return [f for f in findings if f['status'] == 'regression' and f['night'] == night]


# ---- simulated run records as perflog lines (the CLI tests) ---------------------------------------

HEADER = ('job_completion_time|reframe version|name|system|partition|environ|iob_params|jobid|'
          'result|iob_reps|iob_provenance|write_bw_var=write_bw_value|write_bw_unit|write_bw_ref|'
          'write_bw_lower_thres|write_bw_upper_thres|read_bw_var=read_bw_value|read_bw_unit|'
          'read_bw_ref|read_bw_lower_thres|read_bw_upper_thres')


def perflog_line(r):
    """One perflog line (docs/CONTRACT.md section 3) of a run record made by ``record``."""
    reps = ';'.join(f'{p}=' + ','.join(f'{int(b)}:{float(s)!r}' for b, s in rs)
                    for p, rs in r['reps'].items())
    perf = []
    for phase in ('write', 'read'):
        rs = r['reps'].get(phase)
        value = float(np.median([b / s / MiB for b, s in rs])) if rs else None
        perf += [f'{phase}_bw={value!r}' if value else f'{phase}_bw=None', 'MiB/s', '0', 'None',
                 'None']
    return '|'.join([r['time'].strftime('%Y-%m-%dT%H:%M:%S+0000'), 'reframe 4.10.4', r['check'],
                     r['system'], r['partition'], r['environ'], r['params'], r['jobid'], 'pass',
                     reps, '{}'] + perf)


def write_perflogs(directory, records):
    """Records as ReFrame perflogs under DIRECTORY/<system>/<partition>/<check class>.log."""
    from pathlib import Path
    files = {}
    for r in sorted(records, key=lambda r: r['time']):
        path = Path(directory) / r['system'] / r['partition'] / f"{r['check'].split()[0]}.log"
        files.setdefault(path, [HEADER]).append(perflog_line(r))
    for path, lines in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('\n'.join(lines) + '\n')
    return Path(directory)
