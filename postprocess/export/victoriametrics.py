"""VictoriaMetrics' JSON-lines import format (``POST <url>/api/v1/import``), for two producers.

* ``perflog_record_lines`` is the ``json_formatter`` of ReFrame's ``httpjson`` perflog handler
  (wired by configs/settings.py for a system whose file says ``'export': {'victoriametrics': URL}``):
  one line per performance variable of a finished check, at its job completion time.
* ``finding_lines`` turns the nightly verdict's findings into ``ioregress_finding`` samples, which a
  Grafana panel shows as annotations (configs/grafana/ioregress.json): value 1, the change a label,
  since Grafana's Prometheus annotations keep only samples > 0 (some releases: >= 1).

Stdlib only: configs/settings.py loads this file by path when ReFrame reads its configuration.
One line is ``{"metric": {"__name__": ..., label: value...}, "values": [v], "timestamps": [ms]}``.
"""
import base64
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request

PHASES = ('write', 'read')
FINDING_METRIC = 'ioregress_finding'
IMPORT_PATH = '/api/v1/import'


def metric_name(perf_var):
    """'write_bw' -> 'ioregress_write_bw' (Prometheus names: [a-zA-Z0-9_])."""
    return 'ioregress_' + re.sub(r'\W', '_', perf_var.split(':')[-1])


def phase_of(perf_var):
    head = perf_var.split(':')[-1].split('_', 1)[0]
    return head if head in PHASES else ''


def _line(name, labels, value, stamp_ms):
    metric = {'__name__': name}
    metric.update({k: '' if v is None else str(v) for k, v in labels.items()})
    return json.dumps({'metric': metric, 'values': [value], 'timestamps': [stamp_ms]},
                      sort_keys=True)


def perflog_record_lines(record, extras, ignore_keys):
    """httpjson ``json_formatter(record, extras, ignore_keys)``: the record's performance values
    as import lines; None (nothing sent) for a record without any. ``extras`` become labels too
    (e.g. a site name)."""
    perf = getattr(record, 'check_perfvalues', None) or {}
    completed = getattr(record, 'check_job_completion_time_unix', None)
    stamp = int(float(completed if completed is not None else time.time()) * 1000)
    labels = {'system': getattr(record, 'check_system', ''),
              'partition': getattr(record, 'check_partition', ''),
              'environ': getattr(record, 'check_environ', ''),
              'check': getattr(record, 'check_name', ''),
              'params': getattr(record, 'check_iob_params', '') or ''}
    labels.update({k: v for k, v in (extras or {}).items() if k not in (ignore_keys or ())})
    lines = []
    for var, info in perf.items():
        value, unit = info[0], info[4]
        if value is None:
            continue
        lines.append(_line(metric_name(var), dict(labels, phase=phase_of(var), unit=unit or ''),
                           float(value), stamp))
    return '\n'.join(lines) if lines else None


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
        lines.append(_line(FINDING_METRIC, labels, 1.0, stamp_ms))
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


def httpjson_handler(url):
    """The ReFrame perflog handler that sends every performance value to VictoriaMetrics at
    ``url`` (its base address, e.g. http://vm.example:8428)."""
    return {'type': 'httpjson', 'url': url.rstrip('/') + IMPORT_PATH, 'level': 'info',
            'json_formatter': perflog_record_lines,
            # a busy server answers 429: wait a little, then give up (the perflog file has it all)
            'backoff_intervals': [1, 2], 'retry_timeout': 10}
