"""Drishti's insights on real Darshan logs (iobench captures and PyDarshan's shipped logs), what
iobench says is expected, the insight cache, index.json, the summary modes and the CLI."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from postprocess.darshan import index as darshan_index, insights

pytest.importorskip('darshan')
pytest.importorskip('drishti', reason='pip install drishti-io (ci/setup.sh)')

REPO = pathlib.Path(__file__).resolve().parents[1]
FIX = REPO / 'tests' / 'fixtures' / 'darshan'


def _result(name):
    return json.loads((FIX / f'iobench-{name}.json').read_text())


def _by_code(issues):
    return {i['code']: i for i in issues}


@pytest.fixture(scope='module')
def hdf5_independent():
    return insights.drishti_insights(str(FIX / 'iobench-hdf5-independent.darshan'))


def test_drishti_finds_missing_collectives_and_small_requests(hdf5_independent):
    doc = hdf5_independent
    assert doc['error'] is None and doc['drishti'] == insights.drishti_version()
    found = _by_code(doc['issues'])
    for code in ('M02', 'M03', 'P05', 'P06'):   # no collective reads/writes, small reads/writes
        assert found[code]['level'] == 'critical', found[code]
    assert 'independent write calls' in found['M03']['issue']
    assert any('MPI_File_write_all' in r for r in found['M03']['recommendations'])
    # the collective run of the same benchmark raises neither
    coll = _by_code(insights.drishti_insights(str(FIX / 'iobench-hdf5-collective.darshan'))['issues'])
    assert 'M02' not in coll and 'M03' not in coll


def test_intended_patterns_are_said_not_hidden(hdf5_independent):
    ann = _by_code(insights.annotate(hdf5_independent, _result('hdf5-independent')))
    assert 'independent mode' in ann['M03']['expected'] and ann['M03']['level'] == 'critical'
    assert 'HDF5' in ann['P06']['expected']
    assert 'shared-memory' in ann['P21']['expected']    # imbalance only on OpenMPI's *.sm files
    assert ann['P08']['expected'] is None                # misaligned requests: a real finding
    counts = insights.counts(list(ann.values()))
    assert counts['critical'] == 1 and counts['critical_expected'] >= 5
    # the same log claimed as a collective run: the missing collectives are no longer expected
    claimed = dict(_result('hdf5-independent'), mode='collective')
    ann = _by_code(insights.annotate(hdf5_independent, claimed))
    assert ann['M03']['expected'] is None and 'problem is small' in ann['P06']['expected']
    ann = _by_code(insights.annotate(hdf5_independent, dict(claimed, bytes_per_rank=64 << 20)))
    assert ann['P06']['expected'] is None       # a big collective run with small requests: real
    # without iobench's result only the non-data-file rule can apply
    ann = _by_code(insights.annotate(hdf5_independent, None))
    assert ann['M03']['expected'] is None and ann['P21']['expected']


def test_drishti_failure_is_one_line_not_a_crash():
    import darshan
    dxt = pathlib.Path(darshan.__file__).parent / 'examples' / 'example_logs' / 'dxt.darshan'
    if not dxt.exists():
        pytest.skip('no dxt.darshan in this PyDarshan wheel')
    doc = insights.drishti_insights(str(dxt))   # Drishti 0.8 raises IndexError on this log
    assert doc['issues'] == [] or doc['error'] is None
    if doc['error']:
        assert doc['error'].startswith('Drishti failed: ') and '\n' not in doc['error']


def _run(tree, name, mode, night):
    d = tree / night / 'output' / 'local' / 'default' / 'mpi-gnu' / 'BenchIO_mpiio'
    d.mkdir(parents=True)
    shutil.copyfile(FIX / f'iobench-mpiio-{name}.darshan', d / 'iobench.darshan')
    doc = (FIX / f'iobench-mpiio-{name}.json').read_text()
    doc = doc.replace('"mode":"collective"', f'"mode":"{mode}"').replace('"mode":"independent"', f'"mode":"{mode}"')
    doc = doc.replace('"started":"', f'"started":"{night}-')   # dates order the nights
    (d / 'result.json').write_text(doc)


@pytest.fixture(scope='module')
def nights(tmp_path_factory):
    """Three nights of one check: good, then two runs whose log contradicts their result."""
    tree = tmp_path_factory.mktemp('nights')
    _run(tree, 'collective', 'collective', 'n1')
    _run(tree, 'independent', 'collective', 'n2')
    _run(tree, 'independent', 'collective', 'n3')
    (tree / 'n3' / 'odd.darshan').write_bytes(b'not a log')
    return tree


def test_index_json_links_pages_and_the_last_good_run(nights, tmp_path):
    out = tmp_path / 'site'
    rows, _ = darshan_index.build_index(str(nights), str(out), jobs=2, summaries='none')
    doc = json.loads((out / 'index.json').read_text())
    assert isinstance(doc, list) and len(doc) == 4
    for r in doc:
        for key in ('system', 'partition', 'environ', 'check', 'params', 'time', 'verdict', 'critical',
                    'warnings', 'page', 'diff_prev'):
            assert key in r, key
        assert (out / r['page']).is_file()
    runs = sorted((r for r in doc if r['check'] == 'BenchIO_mpiio'), key=lambda r: r['time'])
    assert [r['verdict'] for r in runs] == ['pass', 'fail', 'fail']
    assert runs[0]['diff_prev'] is None
    # both failures are compared with night 1, the last good run, not with each other
    assert runs[1]['diff_prev'] == runs[2]['diff_prev'] == f'diffs/{runs[0]["sha"][:16]}-{runs[1]["sha"][:16]}.html'
    bad = next(r for r in doc if r['log'].endswith('odd.darshan'))
    assert bad['verdict'] == 'error' and (out / bad['page']).is_file()
    page = (out / runs[1]['page']).read_text()
    assert 'Drishti insights' in page and 'Recommendations' in page
    assert 'href="../' + runs[1]['diff_prev'] in page


def test_insights_cached_by_content_and_drishti_version(nights, tmp_path, monkeypatch):
    out = tmp_path / 'site'
    darshan_index.build_index(str(nights), str(out), jobs=1, summaries='none')
    cache = sorted((out / 'insights').glob('*.json'))
    assert len(cache) == 2            # two distinct readable logs among three runs
    before = {p: p.stat().st_mtime_ns for p in cache}
    pages = {p: p.stat().st_mtime_ns for p in (out / 'logs').iterdir()}
    darshan_index.build_index(str(nights), str(out), jobs=1, summaries='none')
    assert {p: p.stat().st_mtime_ns for p in cache} == before
    assert {p: p.stat().st_mtime_ns for p in (out / 'logs').iterdir()} == pages   # warm: untouched
    stale = json.loads(cache[0].read_text())
    cache[0].write_text(json.dumps(dict(stale, drishti='0.0-old', issues=[])))
    darshan_index.build_index(str(nights), str(out), jobs=1, summaries='none')
    assert json.loads(cache[0].read_text()) == stale   # another Drishti version: recomputed


def test_flagged_summaries_only_for_failed_runs(tmp_path):
    tree = tmp_path / 'tree'
    _run(tree, 'collective', 'collective', 'n1')
    _run(tree, 'independent', 'collective', 'n2')     # fails its Darshan checks
    out = tmp_path / 'site'
    rows, _ = darshan_index.build_index(str(tree), str(out), jobs=2, summaries='flagged')
    bad = next(r for r in rows if r['verdict'] == 'fail')
    good = next(r for r in rows if r['verdict'] == 'pass')
    assert [p.name for p in (out / 'summaries').iterdir()] == [bad['sha'] + '.html']
    assert bad['summary'] and not good['summary']
    page = (out / good['page']).read_text()
    assert 'python -m darshan summary' in page and '--summaries all' in page   # how to get it


def _cli(*args):
    return subprocess.run([sys.executable, '-m', 'postprocess', *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


def test_cli_summaries_option(nights, tmp_path):
    res = _cli('darshan-index', str(nights), '-o', str(tmp_path / 'a'), '--no-summaries', '-q')
    assert res.returncode == 0, res.stderr
    assert 'index.html: 4 logs' in res.stdout and not (tmp_path / 'a' / 'summaries').exists()
    res = _cli('darshan-index', str(nights), '-o', str(tmp_path / 'b'), '--summaries', 'some')
    assert res.returncode == 2 and "'some'" in res.stderr and not (tmp_path / 'b').exists()
