"""VictoriaMetrics' JSON-lines import format (``POST <url>/api/v1/import``; docs/CONTRACT.md
section 5): the metric names and labels sites query, for two producers.

* ``perflog_record_lines`` is the ``json_formatter`` of ReFrame's ``httpjson`` perflog handler
  (``httpjson_handler``, wired by configs/settings.py for a system whose file says
  ``'export': {'victoriametrics': URL}``): one line per performance variable of a finished check,
  at its job completion time.
* postprocess/export/victoriametrics.py turns the nightly verdict's findings into ``FINDING_METRIC``
  samples with ``line``.

Stdlib only: ReFrame calls the formatter while it runs the checks.
One line is ``{"metric": {"__name__": ..., label: value...}, "values": [v], "timestamps": [ms]}``.
"""
import json
import re
import time

from contract.perflog import PHASES

FINDING_METRIC = 'ioregress_finding'
IMPORT_PATH = '/api/v1/import'


def metric_name(perf_var):
    """'write_bw' -> 'ioregress_write_bw' (Prometheus names: [a-zA-Z0-9_])."""
    return 'ioregress_' + re.sub(r'\W', '_', perf_var.split(':')[-1])


def phase_of(perf_var):
    head = perf_var.split(':')[-1].split('_', 1)[0]
    return head if head in PHASES else ''


def line(name, labels, value, stamp_ms):
    """One import line: metric ``name`` with ``labels`` (None -> ''), one sample."""
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
        lines.append(line(metric_name(var), dict(labels, phase=phase_of(var), unit=unit or ''),
                          float(value), stamp))
    return '\n'.join(lines) if lines else None


def httpjson_handler(url):
    """The ReFrame perflog handler that sends every performance value to VictoriaMetrics at
    ``url`` (its base address, e.g. http://vm.example:8428)."""
    return {'type': 'httpjson', 'url': url.rstrip('/') + IMPORT_PATH, 'level': 'info',
            'json_formatter': perflog_record_lines,
            # a busy server answers 429: wait a little, then give up (the perflog file has it all)
            'backoff_intervals': [1, 2], 'retry_timeout': 10}
