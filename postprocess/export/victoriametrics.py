"""The nightly verdict's findings to VictoriaMetrics, in the import format of
contract/victoriametrics.py (whose ReFrame handler sends the perf values).

``finding_lines`` turns the findings into ``ioregress_finding`` samples, which a Grafana panel
shows as annotations (configs/grafana/ioregress.json): value 1, the change a label, since
Grafana's Prometheus annotations keep only samples > 0 (some releases: >= 1); ``post_lines`` sends
them.
"""
import base64
import urllib.error
import urllib.parse
import urllib.request

from contract.victoriametrics import FINDING_METRIC, IMPORT_PATH, line


def finding_lines(verdict, stamp_ms, page=''):
    """The verdict document's findings (post/verdict.json) as ``ioregress_finding`` samples of value
    1 (a finding stands: what Grafana draws as an annotation; a signed change as the value hid every
    regression); labels say what, by how much (``change``, e.g. -42.0%), since when, how sure.
    ``page``: the report's address, for the annotation's text."""
    lines = []
    for f in verdict.get('findings', []):
        change = f.get('change')
        labels = {k: f.get(k) or '' for k in ('system', 'partition', 'environ', 'check', 'params',
                                              'phase', 'status', 'scope', 'since', 'night')}
        labels['confirmation'] = f.get('confirmation') or verdict.get('confirmation') or ''
        labels['change'] = '' if change is None else f'{change:+.1%}'
        labels['page'] = page
        lines.append(line(FINDING_METRIC, labels, 1.0, stamp_ms))
    return lines


def public(url):
    """The URL without user:password (for log lines)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit('@', 1)[-1]))


def post_lines(url, lines, timeout=10):
    """POST import lines to a VictoriaMetrics base URL (``user:password@`` in it: basic auth, as
    vmauth wants; ReFrame's handler does the same through requests); raises OSError on failure."""
    body = ('\n'.join(lines) + '\n').encode()
    headers = {'Content-Type': 'application/json'}
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or '')
        headers['Authorization'] = 'Basic ' + base64.b64encode(f'{user}:{password}'.encode()).decode()
    req = urllib.request.Request(public(url).rstrip('/') + IMPORT_PATH, data=body, method='POST',
                                 headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        if resp.status >= 300:
            raise urllib.error.HTTPError(req.full_url, resp.status, resp.reason, resp.headers, None)
    return len(lines)
