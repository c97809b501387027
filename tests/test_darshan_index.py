"""darshan-index and darshan-diff on a real results tree: shipped and captured logs, a truncated
copy, a non-MPI log, a log without POSIX, garbage, and names full of <, >, ", &; the page is
opened in real headless Chromium."""
import os
import pathlib
import shutil
import subprocess
import sys

import markupsafe
import pytest

import ioregress_env
from postprocess.darshan import index as darshan_index, triage as darshan_triage

darshan = pytest.importorskip('darshan')

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
    rows, secs = darshan_index.build_index(str(root), str(out), jobs=2, summaries='all')
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
    assert NASTY not in page and str(markupsafe.escape(NASTY)) in page   # Jinja2 autoescape
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


def _open(drv, path):
    drv.set_window_size(1280, 900)
    drv.get(path.as_uri())
    errors = [e for e in drv.get_log('browser') if e['level'] == 'SEVERE']
    assert not errors, errors
    widths = drv.execute_script('return [document.documentElement.scrollWidth, window.innerWidth]')
    assert widths[0] <= widths[1], f'horizontal overflow at 1280 px: {widths}'


def _screenshot(drv, path):
    """Full-page PNG in the test's tmp dir, copied to $IOREGRESS_ARTIFACTS when set."""
    height = drv.execute_script('return document.documentElement.scrollHeight')
    drv.set_window_size(1280, min(height + 140, 6000))
    drv.save_screenshot(str(path))
    drv.set_window_size(1280, 900)
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    art = ioregress_env.get('IOREGRESS_ARTIFACTS')
    if art:
        os.makedirs(art, exist_ok=True)
        shutil.copy(path, art)


def _visible(drv):
    return [r for r in drv.find_elements('css selector', '#runs tbody tr') if r.is_displayed()]


def test_index_in_headless_chromium(site, browser, tmp_path):
    out, rows = site
    drv = browser
    _open(drv, out / 'index.html')
    heads = [th.text for th in drv.find_elements('css selector', '#runs th')]
    assert heads[-2:] == ['critical', 'warnings']
    # the last column is whole: its right edge is inside the window
    right = drv.execute_script("const r = document.querySelector('#runs th:last-child')"
                               ".getBoundingClientRect(); return [r.right, window.innerWidth]")
    assert right[0] <= right[1]
    assert len(_visible(drv)) == len(rows) and drv.find_element('id', 'shown').text == str(len(rows))
    cell = drv.find_element('css selector', '#runs tbody').text
    assert '<b>x&"y"' in cell                     # shown as text, not markup
    _screenshot(drv, tmp_path / 'darshan-index.png')

    # sort by critical issues: largest first, then reversed
    drv.find_element('css selector', '#runs th:nth-child(9) button').click()
    crit = [int(r.get_attribute('data-critical')) for r in _visible(drv)]
    assert crit == sorted(crit, reverse=True) and crit[0] == max(r['insight_counts']['critical'] for r in rows)
    drv.find_element('css selector', '#runs th:nth-child(9) button').click()
    assert [int(r.get_attribute('data-critical')) for r in _visible(drv)] == sorted(crit)

    # filter by words, then by Drishti's findings
    box = drv.find_element('id', 'filter')
    box.send_keys('hdf5')
    shown = _visible(drv)
    assert 0 < len(shown) < len(rows) and all('hdf5' in r.text.lower() for r in shown)
    assert drv.find_element('id', 'shown').text == str(len(shown))
    box.clear()
    box.send_keys(' ')   # clear() fires no input event
    from selenium.webdriver.support.ui import Select
    Select(drv.find_element('id', 'insight')).select_by_value('critical')
    want = sum(1 for r in rows if r['insight_counts']['critical'])
    assert 0 < want < len(rows)
    assert len(_visible(drv)) == want and all(int(r.get_attribute('data-critical')) > 0 for r in _visible(drv))
    _screenshot(drv, tmp_path / 'darshan-index-critical.png')
    assert not [e for e in drv.get_log('browser') if e['level'] == 'SEVERE']


def test_log_page_in_headless_chromium(site, browser, tmp_path):
    out, rows = site
    drv = browser
    row = _row(rows, 'BenchIO_hdf5-independent')
    _open(drv, out / 'index.html')
    drv.find_element('link text', 'BenchIO_hdf5-independent').click()
    assert drv.current_url.endswith(row['page'])
    assert not [e for e in drv.get_log('browser') if e['level'] == 'SEVERE']
    text = drv.find_element('tag name', 'body').text
    assert 'Critical issues' in text and 'Recommendations:' in text
    m03 = drv.find_element('xpath', "//div[contains(@class,'insight')][.//span[text()='M03']]")
    assert 'Expected by iobench: this is the independent mode' in m03.text
    assert 'MPI_File_write_all' in m03.text
    widths = drv.execute_script('return [document.documentElement.scrollWidth, window.innerWidth]')
    assert widths[0] <= widths[1], f'horizontal overflow at 1280 px: {widths}'
    _screenshot(drv, tmp_path / 'darshan-log-page.png')
    drv.find_element('partial link text', 'all Darshan logs').click()
    assert drv.current_url.endswith('index.html')
