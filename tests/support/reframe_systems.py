"""Throw-away ReFrame systems for tests: copies of the `local` system (another name, a hostname that
never matches, its partition's features and extras replaced or extended) beside configs/settings.py's
own, written as a configuration file for `reframe -C`; select one with `--system NAME`."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TEMPLATE = '''
import copy, importlib.util
_spec = importlib.util.spec_from_file_location('ioregress_settings', {settings!r})
_settings = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_settings)
site_configuration = copy.deepcopy(_settings.site_configuration)
_local = next(s for s in site_configuration['systems'] if s['name'] == 'local')
_env = next(e for e in site_configuration['environments'] if e['name'] == 'mpi-gnu'
            and 'local' in e['target_systems'])
for name, features, extras in {systems!r}:
    system = copy.deepcopy(_local)
    system.update(name=name, hostnames=['^never-match-' + name + '$'])
    part = system['partitions'][0]
    part['features'] = features
    part['extras'] = dict(part['extras'], **extras)
    site_configuration['systems'].insert(0, system)
    site_configuration['environments'].append(dict(copy.deepcopy(_env), target_systems=[name]))
'''


def write_config(path, systems):
    """``systems``: [(name, partition features, extras added to local's)]; returns ``path``."""
    path = Path(path)
    path.write_text(TEMPLATE.format(settings=str(REPO / 'configs' / 'settings.py'), systems=list(systems)))
    return path
