"""darshan-index and darshan-diff on a real results tree: shipped and captured logs, a truncated
copy, a non-MPI log, a log without POSIX, garbage, and names full of <, >, ", &; the page is
opened in real headless Chromium."""
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

darshan = pytest.importorskip('darshan')

from postprocess.darshan import index as darshan_index, triage as darshan_triage  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
WHEEL = pathlib.Path(darshan.__file__).parent
FIX = REPO / 'tests' / 'fixtures' / 'darshan'
NASTY = '<b>x&"y"'


def _copy(src, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


@pytest.fixture(scope='module')
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp('results')
    out = root / 'output' / 'local' / 'default' / 'mpi-gnu'
    for name in ('mpiio-collective', 'hdf5-independent'):   # ReFrame's layout: result.json beside
        _copy(FIX / f'iobench-{name}.darshan', out / f'BenchIO_{name}' / 'iobench.darshan')
        _copy(FIX / f'iobench-{name}.json', out / f'BenchIO_{name}' / 'result.json')
    odd = root / 'odd'
    _copy(WHEEL / 'examples' / 'example_logs' / 'ior_hdf5_example.darshan', odd / NASTY / f'{NASTY}.darshan')
    _copy(FIX / 'nonmpi-dd.darshan', odd / 'nonmpi.darshan')
    _copy(WHEEL / 'tests' / 'input' / 'noposix.darshan', odd / 'noposix.darshan')
    (odd / 'truncated.darshan').write_bytes((WHEEL / 'examples' / 'example_logs' /
                                             'ior_hdf5_example.darshan').read_bytes()[:3000])
    (odd / 'garbage.darshan').write_bytes(b'<html>not a log</html>')
    return root


@pytest.fixture(scope='module')
def site(tree, tmp_path_factory):
    out = tmp_path_factory.mktemp('site')
    rows, secs = darshan_index.build_index(str(tree), str(out), jobs=2, summaries=False)
    return out, rows


@pytest.fixture(scope='module')
def small_site(tmp_path_factory):
    # PyDarshan summaries take seconds each: build them for two logs only
    root = tmp_path_factory.mktemp('small')
    _copy(FIX / 'iobench-mpiio-collective.darshan', root / 'a' / f'{NASTY}.darshan')
    _copy(FIX / 'iobench-mpiio-collective.json', root / 'a' / 'result.json')
    (root / 'b.darshan').write_bytes((FIX / 'iobench-posix-fpp.darshan').read_bytes()[:1500])
    out = tmp_path_factory.mktemp('small-site')
    rows, secs = darshan_index.build_index(str(root), str(out), jobs=2, summaries=True)
    return root, out, rows


def _row(rows, fragment):
    [row] = [r for r in rows if fragment in r['rel']]
    return row


def test_every_log_has_a_row_with_its_verdict(site):
    out, rows = site
    assert len(rows) == 7
    good = _row(rows, 'BenchIO_mpiio-collective')
    assert good['verdict'] == 'pass' and good['system'] == 'local' and good['environ'] == 'mpi-gnu'
    assert good['iobench_write'] > 0 and good['darshan_bw'] > 0
    assert 'truncated or corrupt' in _row(rows, 'truncated')['message']
    assert _row(rows, 'truncated')['verdict'] == 'error'
    assert 'non-MPI' in _row(rows, 'nonmpi')['message']
    assert 'no POSIX module' in _row(rows, 'noposix')['message']
    assert 'not a readable Darshan log' in _row(rows, 'garbage')['message']
    assert 'no iobench result.json' in _row(rows, NASTY + '.darshan')['message']


def test_names_are_escaped(site):
    out, rows = site
    page = (out / 'index.html').read_text()
    assert NASTY not in page and '&lt;b&gt;x&amp;&quot;y&quot;' in page
    assert not list(out.rglob('*.tmp')), 'a temporary file was left behind'


def test_summaries_cached_by_checksum(small_site):
    root, out, rows = small_site
    good = _row(rows, NASTY)
    assert good['verdict'] == 'pass'
    assert good['summary'] == f'summaries/{good["sha"]}.html' and (out / good['summary']).stat().st_size > 0
    assert 'iobench --backend mpiio --mode collective' in (out / good['summary']).read_text()
    assert _row(rows, 'b.darshan')['verdict'] == 'error' and not _row(rows, 'b.darshan')['summary']
    assert [p.name for p in (out / 'summaries').iterdir()] == [f'{good["sha"]}.html']
    assert not list(out.rglob('*.tmp')), 'a temporary file was left behind'
    before = {p: p.stat().st_mtime_ns for p in (out / 'summaries').iterdir()}
    darshan_index.build_index(str(root), str(out), jobs=2)
    assert {p: p.stat().st_mtime_ns for p in (out / 'summaries').iterdir()} == before


def test_diff_links_consecutive_runs_of_the_same_check(tmp_path):
    base = tmp_path / 'output' / 'local' / 'default' / 'mpi-gnu'
    # night 1: an independent run; night 2 claims independent too, but its log is a collective run
    for night, name in (('n1', 'mpiio-independent'), ('n2', 'mpiio-collective')):
        check_dir = tmp_path / night / base.relative_to(tmp_path) / 'Check'
        _copy(FIX / f'iobench-{name}.darshan', check_dir / 'iobench.darshan')
        doc = (FIX / f'iobench-{name}.json').read_text().replace('"mode":"collective"', '"mode":"independent"')
        (check_dir / 'result.json').write_text(doc)
    rows, _ = darshan_index.build_index(str(tmp_path), str(tmp_path / 'site'), jobs=1, summaries=False)
    first, later = sorted(rows, key=lambda r: r['date'])
    assert first['verdict'] == 'pass' and not first.get('diff')
    assert later['diff'] and (tmp_path / 'site' / later['diff']).exists()
    text = (tmp_path / 'site' / later['diff']).read_text()
    assert 'MPIIO_COLL_WRITES' in text and 'MPIIO_INDEP_WRITES' in text
    assert later['verdict'] == 'fail' and 'MPIIO_COLL_WRITES=4' in later['message']


def test_diff_ranks_collective_vs_independent_first():
    changes = darshan_triage.diff_logs(str(FIX / 'iobench-mpiio-collective.darshan'),
                                       str(FIX / 'iobench-mpiio-independent.darshan'))
    top = [c['counter'] for c in changes[:4]]
    assert set(top) == {'MPIIO_COLL_WRITES', 'MPIIO_INDEP_WRITES', 'MPIIO_COLL_READS', 'MPIIO_INDEP_READS'}
    assert not darshan_triage.diff_logs(str(FIX / 'iobench-posix-fpp.darshan'),
                                        str(FIX / 'iobench-posix-fpp.darshan'))


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, '-m', 'postprocess', *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_cli_diff_and_bad_input(tmp_path):
    res = _cli('darshan-diff', str(FIX / 'iobench-hdf5-collective.darshan'),
               str(FIX / 'iobench-hdf5-independent.darshan'), '-o', str(tmp_path / 'd.html'))
    assert res.returncode == 0, res.stderr
    assert 'H5D_USE_MPIIO_COLLECTIVE' in res.stdout and (tmp_path / 'd.html').exists()
    res = _cli('darshan-diff', str(tmp_path / 'nope.darshan'), str(FIX / 'nonmpi-dd.darshan'))
    assert res.returncode == 2 and res.stderr.count('\n') == 1 and 'nope.darshan' in res.stderr
    res = _cli('darshan-index', str(tmp_path / 'missing'), '-o', str(tmp_path / 'out'))
    assert res.returncode == 2 and 'missing' in res.stderr and not (tmp_path / 'out').exists()


CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync']


@pytest.mark.skipif(CHROMIUM is None, reason='chromium not installed (apt-get install chromium)')
def test_page_renders_in_headless_chromium(site, tmp_path):
    out, rows = site
    url = (out / 'index.html').as_uri()
    common = [CHROMIUM, *FLAGS, f'--user-data-dir={tmp_path / "profile"}']
    dom = subprocess.run(common + ['--dump-dom', url], capture_output=True, text=True, timeout=120).stdout
    assert dom.count('<tr class=') == len(rows)
    # the inline script ran: it replaced the '?' placeholder with the number of shown rows
    assert re.search(r'<span id="shown">7</span>', dom), 'inline JS did not run'
    assert '<b>x&amp;"y"' not in dom and '&lt;b&gt;x&amp;"y"' in dom
    shot = tmp_path / 'index.png'
    subprocess.run(common + ['--window-size=1400,900', f'--screenshot={shot}', url],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
