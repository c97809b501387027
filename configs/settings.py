"""ReFrame configuration for ioregress.

One file per system lives in ``configs/systems/<name>.py`` and defines ``site_configuration`` with
``systems`` (one system) and ``environments``. This file merges them, puts the catch-all ``local``
system last (its hostname pattern matches any host), and owns logging: the perflog line format is a
contract with ``postprocess/`` (docs/CONTRACT.md section 3).

Use: ``reframe -C configs/settings.py -c reframe_checks -r --tag quick``
"""
import importlib.util
import os
import pathlib

_HERE = pathlib.Path(__file__).resolve().parent
_SYSTEMS_DIR = _HERE / 'systems'


def _load_system(path):
    spec = importlib.util.spec_from_file_location(f'ioregress_system_{path.stem}', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.site_configuration


def _all_systems():
    files = sorted(p for p in _SYSTEMS_DIR.glob('*.py') if not p.name.startswith('_'))
    # `local` matches every host, so it must come after the real systems.
    files.sort(key=lambda p: p.stem == 'local')
    systems, environments = [], []
    for f in files:
        cfg = _load_system(f)
        systems += cfg['systems']
        environments += cfg.get('environments', [])
    return systems, environments


_systems, _environments = _all_systems()

# Perflog line: see docs/CONTRACT.md section 3. Changing it rotates existing perflogs to .h<N>.
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

site_configuration = {
    'systems': _systems,
    'environments': _environments,
    'logging': [
        {
            'level': 'debug',
            'handlers': [
                {'type': 'stream', 'name': 'stdout', 'level': 'info',
                 'format': '%(message)s'},
                {'type': 'file', 'name': 'reframe.log', 'level': 'debug',
                 'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s',
                 'append': False},
            ],
            'handlers_perflog': [
                {'type': 'filelog', 'prefix': '%(check_system)s/%(check_partition)s',
                 'level': 'info', 'format': PERFLOG_FORMAT,
                 'format_perfvars': PERFLOG_FORMAT_PERFVARS,
                 'datefmt': '%Y-%m-%dT%H:%M:%S%z', 'append': True},
            ],
        }
    ],
    'general': [
        {
            'check_search_path': [str(_HERE.parent / 'reframe_checks')],
            'report_file': os.environ.get(
                'IOREGRESS_REPORT', str(_HERE.parent / 'results' / 'reports' / 'run-report-{sessionid}.json')),
        }
    ],
}
