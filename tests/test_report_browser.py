"""The report page opened in real headless Chromium (Debian's chromium + chromium-driver, driven by
selenium; nothing downloaded at run time), asserting what a person sees.

The run directory is built from real parts: the synthetic perflog history (12 nights; the last
one holds a 35 % write drop), real `detect --json` findings on it, a ReFrame-shaped report.json of
those checks with one failure and one skip, and a Darshan index.json with a page and a diff per
log (the layout the Darshan half writes). Screenshots go to the test's tmp dir and, when
IOREGRESS_ARTIFACTS is set, are copied there.
"""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import ioregress_env
from tests.support.report_inputs import cases_for, pp, SYNTH, synthetic_findings


CHROMIUM = shutil.which('chromium')
DRIVER = shutil.which('chromedriver')
webdriver = pytest.importorskip('selenium.webdriver', reason='selenium not installed (ci/setup.sh)')
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                reason='apt-get install chromium chromium-driver (ci/setup.sh)')


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('report')
    findings = synthetic_findings(tmp)
    checks = sorted({f['check'] for f in findings})
    failed = next(c for c in checks if 'posix:fpp' in c and '%ranks=4' in c)
    report = cases_for(findings, fail=failed, skip=[c for c in checks if 'hdf5' in c][:1])
    run = tmp / 'run'
    darshan = run / 'post' / 'darshan'
    (darshan / 'logs').mkdir(parents=True)
    rows = []
    for i, f in enumerate({(f['system'], f['partition'], f['environ'], f['check'], f['params'])
                           for f in findings if f.get('scope') != 'system'}):
        page, diff = f'logs/{i}.html', f'logs/{i}-diff.html'
        (darshan / page).write_text(f'<title>log {i}</title>{f[3]}')
        (darshan / diff).write_text(f'<title>diff {i}</title>{f[3]}')
        rows.append(dict(zip(('system', 'partition', 'environ', 'check', 'params'), f),
                         night='2026-11-12', page=page, diff_prev=diff, critical=2))
    (darshan / 'index.json').write_text(json.dumps(rows))
    (darshan / 'index.html').write_text('<title>Darshan index</title>')
    (run / 'report.json').write_text(json.dumps(report))
    (run / 'post' / 'detect.json').write_text(json.dumps(findings))
    proc = pp('report', '--perflogs', SYNTH, '-o', run / 'post' / 'report',
              '--max-history-plots', '8')
    assert proc.returncode == 0, proc.stderr
    return {'page': run / 'post' / 'report' / 'index.html', 'findings': findings,
            'failed': failed, 'run': run}


def screenshot(drv, path, full=True):
    if full:
        height = drv.execute_script('return document.documentElement.scrollHeight')
        drv.set_window_size(1280, min(height + 140, 6000))
    drv.save_screenshot(str(path))
    drv.set_window_size(1280, 900)
    art = ioregress_env.get('IOREGRESS_ARTIFACTS')
    if art:
        os.makedirs(art, exist_ok=True)
        shutil.copy(path, art)


def open_page(drv, page):
    drv.get(page.as_uri())
    for _ in range(100):                 # Bokeh renders asynchronously into canvases
        if drv.execute_script("return document.readyState") == 'complete' and \
                drv.execute_script("return document.querySelectorAll('figure.plot').length == 0 "
                                   "|| document.querySelectorAll('.bk-Figure, .bk-Canvas, "
                                   "figure.plot div[data-root-id] *').length > 0"):
            break
        time.sleep(0.1)
    time.sleep(0.5)


def visible_text(drv, css):
    return [e.text for e in drv.find_elements('css selector', css) if e.is_displayed()]


def test_verdict_lines_come_first_and_link(site, browser, tmp_path):
    open_page(browser, site['page'])
    heading = browser.find_element('css selector', '#verdict h2').text
    lines = browser.find_elements('css selector', 'ul.attention li.line')
    regressions = [f for f in site['findings'] if f['status'] == 'regression']
    assert heading == f'{len(lines)} things need your attention'
    kinds = [li.get_attribute('data-kind') for li in lines]
    assert kinds == ['regression'] * len(regressions) + ['failed']
    first = lines[0].text
    r = regressions[0]
    assert 'REGRESSION' in first and f'{r["change"]:+.1%}' in first and r['phase'] in first
    assert f'since {r.get("since") or r["night"]}' in first
    assert 'verification failed at element 17' in lines[-1].text
    # the verdict is above everything else on the page
    top = browser.execute_script("return document.getElementById('verdict').offsetTop")
    assert top < browser.execute_script("return document.getElementById('series').offsetTop")
    # sparkline and its three links, each to a file that exists
    assert lines[0].find_elements('css selector', 'svg.spark polyline')
    links = {a.text: a.get_attribute('href') for a in lines[0].find_elements('css selector',
                                                                             '.links a')}
    # (the Darshan index's Drishti count of critical issues rides on the log link)
    assert set(links) == {'history', 'Darshan log (2 critical)', 'diff vs last good'}
    for label in ('Darshan log (2 critical)', 'diff vs last good'):
        assert Path(links[label].removeprefix('file://')).exists()
    browser.find_element('link text', 'Darshan log (2 critical)').click()
    assert r['check'] in browser.page_source
    browser.back()
    # the history link scrolls to a rendered interactive figure
    anchor = links['history'].split('#', 1)[1]
    fig = browser.find_element('id', anchor)
    assert fig.find_elements('css selector', 'div') and fig.size['height'] > 150
    screenshot(browser, tmp_path / 'report-verdict.png')


def test_filter_shows_only_matching_series(site, browser, tmp_path):
    open_page(browser, site['page'])
    all_rows = browser.find_elements('css selector', 'details.group tr.row')
    box = browser.find_element('id', 'filter')
    box.send_keys('hdf5 write')
    shown = [tr for tr in all_rows if tr.is_displayed()]
    expect = [tr for tr in all_rows if all(w in tr.get_attribute('data-text').lower()
                                           for w in ('hdf5', 'write'))]
    assert 0 < len(shown) == len(expect) < len(all_rows)
    assert all('hdf5' in tr.text and 'write' in tr.text for tr in shown)
    assert browser.find_element('id', 'shown').text == \
        f'{len(shown)} of {len(all_rows)} series shown'
    hidden_groups = [g.get_attribute('data-group') for g in
                     browser.find_elements('css selector', 'details.group') if not g.is_displayed()]
    assert 'BaselineFio' in hidden_groups
    screenshot(browser, tmp_path / 'report-filtered.png', full=False)
    box.clear()
    box.send_keys(' ')                   # an input event with an empty filter restores all
    assert sum(tr.is_displayed() for tr in all_rows) == len(all_rows)
    browser.find_element('id', 'only-flagged').click()
    flagged = [tr for tr in all_rows if tr.is_displayed()]
    assert flagged and all(tr.get_attribute('data-status') in ('improvement', 'regression',
                                                               'degraded', 'noisy') for tr in flagged)


def test_no_js_errors_no_network_no_horizontal_scroll(site, browser):
    open_page(browser, site['page'])
    errors = [e for e in browser.get_log('browser') if e['level'] in ('SEVERE', 'WARNING')]
    assert errors == []
    width = browser.execute_script('return [document.documentElement.scrollWidth, '
                                   'document.documentElement.clientWidth]')
    assert width[0] <= width[1], width
    # self-contained: every script and stylesheet inline, nothing fetched over a network
    remote = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => !n.startsWith('file:'))")
    assert remote == []
    assert browser.execute_script("return document.querySelectorAll('script[src], "
                                  "link[rel=stylesheet]').length") == 0
    # the interactive figures rendered (Bokeh draws into canvases)
    assert browser.execute_script("return Array.from(document.querySelectorAll('figure.plot'))"
                                  ".every(f => f.getBoundingClientRect().height > 150)")


def test_hostile_check_name_reads_as_written_in_the_interactive_title(browser, tmp_path):
    """Bokeh escapes its document itself and shows titles as text: the report hands it the raw
    name, so the title reads exactly as the perflog wrote it (no '&lt;' or '&amp;amp;' shown)."""
    hostile = 'BenchIO <b>x</b> & "y" &lt;z'
    logs = tmp_path / 'perflogs'
    shutil.copytree(SYNTH, logs)
    log = logs / 'synthetic' / 'p1' / 'BenchIO.log'
    red = 'BenchIO %size=64 %ranks=4 %stripe=default %io=mpiio:collective'   # drawn first
    text = log.read_text()
    assert f'|{red}|' in text
    log.write_text(text.replace(f'|{red}|', f'|{hostile}|'))
    out = tmp_path / 'out'
    proc = pp('report', '--perflogs', logs, '-o', out, '--max-history-plots', '2')
    assert proc.returncode == 0, proc.stderr
    open_page(browser, out / 'index.html')
    titles = browser.execute_script(
        "return Bokeh.documents.flatMap(d => d.roots()).filter(r => r.title)"
        ".map(r => r.title.text)")
    assert {f'{hostile} · write', f'{hostile} · read'} & set(titles), titles
    assert not any('&lt;' in t.replace('&lt;z', '') or '&amp;' in t for t in titles)
