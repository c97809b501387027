"""What in a Darshan log looks wrong: Drishti's (drishti-io, LBNL) insights, and iobench's context.

``drishti_insights(log)`` runs Drishti's own Darshan analysis (``drishti.handlers.handle_darshan``)
in this process with its console output swallowed, and records every insight it raises through
Drishti's ``message()`` as plain data: code, level, issue, recommendations, details. Drishti parses
its command line when imported, so the import sees a stand-in argv; its options object is shared by
its modules, so setting ``log_path`` there selects the log.

``annotate(issues, result)`` then says, beside an insight, when iobench meant to do it (the
independent mode of a benchmark exists to show the cost of non-collective I/O; the mdfiles
workload exists to make metadata traffic) or when it concerns no data file (OpenMPI's
shared-memory ``*.sm`` files). Nothing is hidden: an expected insight keeps its level and is
counted apart.
"""
import contextlib
import io
import os
import re
import sys
import warnings

LEVELS = {1: 'critical', 2: 'warning', 3: 'info', 4: 'ok'}   # drishti.includes.config HIGH..OK
_QUOTED = re.compile(r'"([^"]+)"')
_NOT_DATA = re.compile(r'(\.locktest(\.\d+)?$|_cid-[-\d]+\.sm$)')
SMALL_REQUEST = 1 << 20      # Drishti's 'small_bytes' threshold


def drishti_version():
    from importlib import metadata
    try:
        return metadata.version('drishti-io')
    except metadata.PackageNotFoundError:
        return None


def _drishti():
    saved = sys.argv
    sys.argv = ['drishti', 'stand-in.darshan']     # Drishti runs argparse at import time
    try:
        from drishti.handlers import handle_darshan
        from drishti.includes import module, parser
    finally:
        sys.argv = saved
    return handle_darshan, module, parser.args


def drishti_insights(log):
    """{'drishti': version, 'issues': [...], 'error': None or one line} for one log."""
    version = drishti_version()
    if version is None:
        return {'drishti': None, 'issues': [], 'error': 'Drishti is not installed (pip install drishti-io)'}
    handler, module, args = _drishti()
    issues = []
    original = module.message

    def record(code, target, level, issue, recommendations=None, details=None):
        issues.append({'code': code, 'level': LEVELS.get(level, 'info'), 'issue': issue,
                       'recommendations': [r['message'] for r in recommendations or ()],
                       'details': [d['message'] for d in details or ()]})
        return original(code, target, level, issue, recommendations, details)

    args.log_path = os.path.abspath(log)
    module.message = record
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter('ignore')
            handler.handler()
    except (Exception, SystemExit) as err:   # Drishti on an odd log must not end the index
        return {'drishti': version, 'issues': [], 'error': f'Drishti failed: {type(err).__name__}: {err}'}
    finally:
        module.message = original
    return {'drishti': version, 'issues': issues, 'error': None}


def _only_non_data_files(issue):
    """True when every file the insight names is OpenMPI's shared-memory or lock-test file."""
    names = [n for d in issue['details'] for n in _QUOTED.findall(d)]
    count = re.search(r'accessing (\d+) ', issue['issue'])
    if not names or (count and int(count.group(1)) > len(names)):
        return False
    return all(_NOT_DATA.search(n) for n in names)


def expected_because(issue, result):
    """Why iobench meant this insight to fire (one sentence), or None."""
    code = issue['code']
    if code in ('P18', 'P19', 'P21', 'P22') and _only_non_data_files(issue):
        return ("only OpenMPI's shared-memory (*.sm) or lock-test files, not iobench's data files; "
                'the data files are balanced')
    if not result:
        return None
    backend, mode, pattern = result.get('backend'), result.get('mode'), result.get('pattern')
    if code in ('M02', 'M03') and mode == 'independent':
        return ('this is the independent mode: it exists to show the cost of non-collective I/O '
                '(compare the collective mode of the same check)')
    if code in ('M06', 'M07'):
        return 'iobench times blocking I/O calls by design (barrier to barrier)'
    if code == 'M01' and backend in ('posix', 'adios2'):
        return f'the {backend} backend does not use MPI-IO by design'
    if code in ('P05', 'P06', 'P15', 'P16'):
        if pattern == 'mdfiles':
            return 'the mdfiles workload writes many small files on purpose (a metadata benchmark)'
        if pattern == 'mddatasets':
            return 'the mddatasets workload writes many small datasets on purpose (a metadata benchmark)'
        if backend == 'hdf5' and mode == 'independent':
            return ("HDF5's independent mode writes each rank's non-contiguous block piece by piece; "
                    'the collective mode aggregates the same data into large requests')
        per_rank = result.get('bytes_per_rank')
        if isinstance(per_rank, (int, float)) and per_rank < SMALL_REQUEST:
            return f'the problem is small: {int(per_rank)} bytes per rank, under 1 MiB in all'
    if code in ('P17', 'P01', 'P02') and pattern in ('mdfiles', 'mddatasets'):
        return f'the {pattern} workload measures metadata operations on purpose'
    return None


def annotate(doc, result):
    """The insights of ``doc`` (drishti_insights' answer), each with 'expected' (reason or None)."""
    return [dict(i, expected=expected_because(i, result)) for i in (doc or {}).get('issues') or ()]


def counts(issues, error=None):
    """Column values for the index: critical issues and warnings, unexpected and expected."""
    out = {'critical': 0, 'warnings': 0, 'critical_expected': 0, 'warnings_expected': 0,
           'error': error}
    for i in issues:
        name = {'critical': 'critical', 'warning': 'warnings'}.get(i['level'])
        if name:
            out[name + ('_expected' if i.get('expected') else '')] += 1
    return out
