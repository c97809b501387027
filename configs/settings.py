"""ReFrame configuration for ioregress.

One file per system lives in ``configs/systems/<name>.py`` and defines ``site_configuration`` with
``systems`` (one system) and ``environments``. This file merges them, puts the catch-all ``local``
system last (its hostname pattern matches any host), and owns logging: the perflog line format is a
contract with ``postprocess/`` (docs/CONTRACT.md section 3, contract/perflog.py). The system files and
this one import the installed packages (``iobench_lib``, ``contract``: ci/setup.sh runs
``pip install -e .``), nothing of ``postprocess/``.

Use: ``reframe -C configs/settings.py -c reframe_checks -r --tag quick``
"""
import importlib.util
import pathlib

import ioregress_env
from contract import victoriametrics
from contract.perflog import PERFLOG_DATEFMT, PERFLOG_FORMAT, PERFLOG_FORMAT_PERFVARS

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


def _exports(systems):
    """A system file's optional ``'export': {'victoriametrics': URL}`` (docs/nightly.md): taken
    out of the system entry (ReFrame's schema has no such key) -> {system name: URL}."""
    out = {}
    for system in systems:
        export = system.pop('export', None) or {}
        if export.get('victoriametrics'):
            out[system['name']] = export['victoriametrics']
    return out


_export_urls = _exports(_systems)
EXPORT_URLS = dict(_export_urls)    # read by `postprocess export-findings --config`

_HANDLERS = [
    {'type': 'stream', 'name': 'stdout', 'level': 'info', 'format': '%(message)s'},
    {'type': 'file', 'name': 'reframe.log', 'level': 'debug',
     'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s', 'append': False},
]
# the perflog file; its line is the contract postprocess reads (contract/perflog.py)
_PERFLOG_FILE = {'type': 'filelog', 'prefix': '%(check_system)s/%(check_partition)s',
                 'level': 'info', 'format': PERFLOG_FORMAT, 'format_perfvars': PERFLOG_FORMAT_PERFVARS,
                 'datefmt': PERFLOG_DATEFMT, 'append': True}


def _logging():
    """The perflog file for every system; a system with an export URL also sends each performance
    value to VictoriaMetrics (ReFrame's httpjson handler; the first entry naming a system wins)."""
    entries = []
    for name, url in _export_urls.items():
        entries.append({'target_systems': [name], 'level': 'debug', 'handlers': _HANDLERS,
                        'handlers_perflog': [_PERFLOG_FILE, victoriametrics.httpjson_handler(url)]})
    entries.append({'level': 'debug', 'handlers': _HANDLERS, 'handlers_perflog': [_PERFLOG_FILE]})
    return entries


site_configuration = {
    'systems': _systems,
    'environments': _environments,
    'logging': _logging(),
    # ReFrame's results DB: off here; ci/nightly.sh turns it on per results tree
    # (RFM_ENABLE_RESULTS_STORAGE, RFM_SQLITE_DB_FILE). The default file is that of the default tree,
    # so `RFM_ENABLE_RESULTS_STORAGE=y reframe -C configs/settings.py --list-stored-sessions` reads it.
    'storage': [{'enable': False,
                 'sqlite_db_file': str(_HERE.parent / 'results' / 'reframe.db')}],
    'general': [
        {
            'check_search_path': [str(_HERE.parent / 'reframe_checks')],
            'report_file': ioregress_env.get('IOREGRESS_REPORT') or str(
                _HERE.parent / 'results' / 'reports' / 'run-report-{sessionid}.json'),
        }
    ],
}
