"""Reference files and result helpers of reframe_checks/iobench_lib, without running ReFrame."""
import copy
import json
import pathlib

import pytest
import yaml

from iobench_lib import results
from contract import reference_file

REPO = pathlib.Path(__file__).resolve().parents[1]

KEY = 'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default'


def good():
    return {'require_reference': False,
            'BenchIO': {'$index': ['$partition', 'iob_params'],
                        'local:default': {KEY: {'write_bw': [400, -0.8, None, 'MiB/s'],
                                                'read_bw': ['$xfail', 'known', [9, -0.5, 1, 'MiB/s']]}}}}


def test_shipped_reference_files_are_valid():
    files = sorted((REPO / 'configs' / 'references').glob('*.yaml'))
    assert any(f.stem == 'local' for f in files)
    for f in files:
        reference_file.load(f)


def test_local_references_cover_the_quick_suite_on_posix_mpiio_hdf5():
    data = reference_file.load(REPO / 'configs' / 'references' / 'local.yaml')
    part = data['BenchIO']['local:default']
    for io in ('posix:fpp', 'posix:shared', 'mpiio:independent', 'mpiio:collective',
               'hdf5:independent', 'hdf5:collective'):
        backend, mode = io.split(':')
        key = results.params_key(backend, mode, 'benchio', 2, 64, 'default')
        assert set(part[key]) >= {'write_bw', 'read_bw'}, io


def test_good_file_validates_and_looks_up(tmp_path):
    data = reference_file.validate('refs.yaml', good())
    resolve = {'$partition': 'local:default', 'iob_params': KEY}.get
    assert reference_file.lookup(data, 'BenchIO', resolve)['write_bw'][0] == 400
    assert reference_file.lookup(data, 'BenchIO', {'$partition': 'other:p', 'iob_params': KEY}.get) is None
    assert reference_file.lookup(data, 'Other', resolve) is None
    # string keys also act as anchored regular expressions, as in ReFrame
    data['BenchIO']['local:default'] = {'backend=posix,.*': {'write_bw': [1, -0.5, None, 'MiB/s']}}
    assert reference_file.lookup(data, 'BenchIO', resolve)['write_bw'][0] == 1


@pytest.mark.parametrize('mutate, where, what', [
    (lambda d: d['BenchIO']['local:default'][KEY].update(write_bw=['fast', -0.1, None, 'MiB/s']),
     f'BenchIO.local:default.{KEY}.write_bw', 'reference value must be a number'),
    (lambda d: d['BenchIO']['local:default'][KEY].update(write_bw=[1, 0.1, None, 'MiB/s']),
     f'BenchIO.local:default.{KEY}.write_bw', 'lower bound must be a number <= 0'),
    (lambda d: d['BenchIO']['local:default'][KEY].update(write_bw=[1, -0.1, -2, 'MiB/s']),
     f'BenchIO.local:default.{KEY}.write_bw', 'upper bound must be a number >= 0'),
    (lambda d: d['BenchIO']['local:default'][KEY].update(write_bw=400),
     f'BenchIO.local:default.{KEY}.write_bw', 'expected [reference, lower, upper, unit]'),
    (lambda d: d['BenchIO']['local:default'].update({KEY: [1, 2]}),
     f'BenchIO.local:default.{KEY}', 'expected a mapping'),
    (lambda d: d['BenchIO'].update({'$index': '$partition'}),
     'BenchIO.$index', 'expected a list of attribute names'),
    (lambda d: d.update(require_reference='yes'), 'require_reference', 'expected true or false'),
    (lambda d: d.update(BenchIO=[1]), 'BenchIO', 'expected a mapping'),
])
def test_malformed_entries_name_file_and_key(tmp_path, mutate, where, what):
    data = good()
    mutate(data)
    path = tmp_path / 'refs.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(reference_file.ReferenceFileError) as err:
        reference_file.load(path)
    assert str(err.value).startswith(f'{path}: {where}')
    assert what in str(err.value)


def test_unreadable_and_invalid_yaml(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('BenchIO: [unclosed\n')
    with pytest.raises(reference_file.ReferenceFileError, match=f'^{bad}: not valid YAML'):
        reference_file.load(bad)
    with pytest.raises(reference_file.ReferenceFileError, match='cannot read'):
        reference_file.load(tmp_path / 'missing.yaml')


def test_params_key_is_sorted_and_escapes_separators():
    key = results.params_key('hdf5', 'collective', 'benchio', 2, '8,8,8', 'default',
                             params={'alignment': '1,1048576'}, hints={'romio_cb_write': 'enable'})
    assert key == ('alignment=1%2C1048576,backend=hdf5,hint.romio_cb_write=enable,mode=collective,'
                   'pattern=benchio,ranks=2,size=8%2C8%2C8,stripe=default')
    with pytest.raises(ValueError):
        results.params_key('posix', 'fpp', 'benchio', 2, 8, 'default', params={'size': '1'})


def _doc(tmp_path, **over):
    rep = {'rep': 0, 'files': [str(tmp_path / 'f.rep0')],
           'write': {'bytes': 16, 'total_s': 0.5, 'bw_MiBps': 1.0, 'access_bw_MiBps': 2.0,
                     'open_s': 0.1, 'close_s': 0.2},
           'read': {'bytes': 16, 'total_s': 0.25, 'bw_MiBps': 3.0, 'access_bw_MiBps': 4.0,
                    'open_s': 0.3, 'close_s': 0.4, 'verified': True}}
    doc = {'schema': 'iobench-result/1', 'status': 'ok', 'verify': True, 'backend': 'posix',
           'mode': 'fpp', 'pattern': 'benchio', 'ranks': 2, 'bytes_total': 16,
           'repetitions': [rep, dict(copy.deepcopy(rep), rep=1)], 'command': 'iobench --x "a|b"'}
    doc.update(over)
    return doc


def test_result_helpers(tmp_path):
    doc = _doc(tmp_path)
    kw = dict(backend='posix', mode='fpp', pattern='benchio', ranks=2, exitcode=0)
    assert results.problems(doc, **kw) == []
    assert results.reps_string(doc) == 'write=16:0.5,16:0.5;read=16:0.25,16:0.25'
    assert results.perf_values(doc)['read_bw'] == (3.0, 'MiB/s')
    assert 'read_cache_resident' not in results.perf_values(doc)
    doc['repetitions'][1]['read']['cache_resident_before_read'] = 0.25
    assert results.perf_values(doc)['read_cache_resident'] == (0.25, 'fraction')
    line = results.compact_json(results.provenance(doc))
    assert '|' not in line and json.loads(line)['command'] == 'iobench --x "a|b"'
    (tmp_path / 'f.rep0').write_text('left behind')
    doc['repetitions'][1]['read']['bytes'] = 15
    found = results.problems(doc, **dict(kw, exitcode=1, mode='shared'))
    assert any('exit status 1' in p for p in found)
    assert any("mode is 'fpp'" in p for p in found)
    assert any('rep 1 read: 15 bytes' in p for p in found)
    assert any('not deleted' in p for p in found)
    assert results.problems(doc, **dict(kw, keep=True, exitcode=0)) == ['rep 1 read: 15 bytes, '
                                                                        'expected bytes_total 16']
    assert 'no result document' in results.problems(None, **kw)[0]
    failed = _doc(tmp_path, status='failed', error='MPI_File_open: No space left on device')
    assert any('No space left' in p for p in results.problems(failed, **kw))


def test_cache_not_defeated_is_no_read_bandwidth(tmp_path):
    """A +gpfs run in which some rank read its own node's data (iobench cache_defeated false): the
    perflog gets read_cache_defeated=0 and no read_bw, and the provenance says why."""
    doc = _doc(tmp_path, cache_defeated=False,
               cache_defeat="cache not defeated (1 of 2 ranks read their own node's data)")
    values = results.perf_values(doc)
    assert values['read_cache_defeated'] == (0, 'bool')
    assert 'read_bw' not in values and 'read_access_bw' not in values and 'write_bw' in values
    prov = json.loads(results.compact_json(results.provenance(doc)))
    assert prov['cache_defeated'] is False and prov['cache_defeat'].startswith('cache not defeated')
    assert 'read_cache_defeated' not in results.perf_values(_doc(tmp_path, cache_defeated=True))
