"""One simulated run record, as postprocess/history reads a perflog line (tests of the verdict)."""
import datetime

MiB = 2 ** 20


def record(when, c, name, params, bandwidths, session=None, mib=16.0):
    """Check number ``c`` (jobid, seconds after ``when``) with {phase: [MiB/s per repetition]},
    each repetition ``mib`` MiB."""
    reps = {phase: [(mib * MiB, mib / b) for b in bw] for phase, bw in bandwidths.items()}
    return {'time': when + datetime.timedelta(seconds=10 * c), 'system': 'sim', 'partition': 'p1',
            'environ': 'gnu', 'check': name, 'params': params,
            'param_dict': dict(kv.split('=') for kv in params.split(',')), 'jobid': str(c),
            'result': 'pass', 'reps': reps, 'provenance': {}, 'perf': {}, 'reframe': '',
            'session': session, 'source': 'test'}
