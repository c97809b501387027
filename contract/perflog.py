"""The perflog line (docs/CONTRACT.md section 3): what ReFrame writes for the checks and
postprocess/history reads back.

``PERFLOG_FORMAT`` and ``PERFLOG_FORMAT_PERFVARS`` are ReFrame's filelog format (configs/settings.py
hands them over); the header ReFrame writes atop each file follows from them (``header``), and so do
the field names a headerless line is read by (``FIELDS``).
"""
import re

# Changing it rotates existing perflogs to .h<N>.
PERFLOG_FORMAT = (
    '%(check_job_completion_time)s|reframe %(version)s|%(check_name)s|'
    '%(check_system)s|%(check_partition)s|%(check_environ)s|'
    '%(check_iob_params)s|%(check_jobid)s|%(check_result)s|'
    '%(check_iob_reps)s|%(check_iob_provenance)s|%(check_perfvalues)s'
)
PERFLOG_FORMAT_PERFVARS = (
    '%(check_perf_var)s=%(check_perf_value)s|%(check_perf_unit)s|'
    '%(check_perf_ref)s|%(check_perf_lower_thres)s|%(check_perf_upper_thres)s|'
)
# the completion time; history/perflog.py's reader and a night's first ten characters rely on it
PERFLOG_DATEFMT = '%Y-%m-%dT%H:%M:%S%z'

# the phases iob_reps and the perf variables are named by, in this order everywhere
PHASES = ('write', 'read')

# ReFrame 4.10's header rule (reframe/core/logging.py): each %(attr)s is named by attr without
# 'check_' (in the perf group 'check_perf' is the variable's name), the text up to the next % kept
_SPEC = re.compile(r'%\((.*?)\)s(.*?(?=%|$))?')


def header(perfvars=()):
    """The header line ReFrame writes atop a perflog whose lines carry ``perfvars``."""
    fixed = ''.join(('' if attr == 'check_perfvalues' else attr.removeprefix('check_')) + delim
                    for attr, delim in _SPEC.findall(PERFLOG_FORMAT))
    perf = ''.join(attr.replace('check_perf', var) + delim for var in perfvars
                   for attr, delim in _SPEC.findall(PERFLOG_FORMAT_PERFVARS))
    return (fixed + perf).rstrip('|')


# the fixed fields of the header, in order; also how a line before any header is read
FIELDS = header().split('|')


def parse_params(text):
    """``backend=mpiio,mode=collective,...`` -> dict (values kept as strings)."""
    params = {}
    for item in filter(None, text.split(',')):
        key, sep, value = item.partition('=')
        if not sep or not key:
            raise ValueError(f'iob_params item without key=value: {item!r}')
        params[key.strip()] = value.strip()
    return params
