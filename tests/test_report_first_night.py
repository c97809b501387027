"""The first night's page, as a newcomer opens it: before the tables, what ran and how the
libraries compare here (the figures already drawn), and when verdicts start. The page is made by
the real `postprocess report` from a real one-night perflog (six libraries/modes of BenchIO) and
looked at in headless Chromium at 1280 px: the library comparison is on the first screen."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PERFLOGS = REPO / 'tests' / 'fixtures' / 'perflogs' / 'real' / 'local' / 'default'


@pytest.fixture(scope='module')
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp('first-night') / 'report'
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'report', '--perflogs', str(PERFLOGS),
                           '-o', str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / 'index.html'


def test_what_ran_and_when_verdicts_start_come_before_the_tables(page):
    html = page.read_text()
    first, series = html.index('id="first-night"'), html.index('id="series"')
    assert first < series
    block = html[first:series]
    assert 'Measured on local:default: BaselineFio (1 series), BenchIO (6 series); libraries: hdf5, mpiio, posix; fio as the file system baseline.' in block
    assert 'figures/libraries_local_default' in block
    assert 'Verdicts start on the 6th night' in html[:first]


def test_library_comparison_is_on_the_first_screen_at_1280px(page, browser, tmp_path):
    browser.set_window_size(1280, 900)
    browser.get(page.as_uri())
    height = browser.execute_script('return window.innerHeight')
    img = browser.find_element('css selector', '#first-night img[src*="libraries_"]')
    top, loaded = browser.execute_script(
        'const r = arguments[0].getBoundingClientRect();'
        'return [r.top, arguments[0].complete && arguments[0].naturalWidth > 0];', img)
    browser.save_screenshot(str(tmp_path / 'first-night.png'))
    assert loaded, 'the library figure did not load'
    # its upper half at least is visible without scrolling
    assert top + img.size['height'] / 2 < height, (top, img.size, height)
    assert browser.execute_script('return document.documentElement.scrollWidth') <= 1280
