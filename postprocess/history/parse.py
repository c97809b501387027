"""Text runs -> runs and repetitions, in SQL: one parser of ``iob_params``, ``iob_reps`` and
``iob_provenance`` (docs/CONTRACT.md section 3) for perflog lines, ReFrame reports and the results
DB alike.

A text run (``TEXT_COLUMNS``) is what a source gives for one test case: its completion time, key
fields and the three iob_* texts as logged, its perf values, and the session when the source knows
it. ``parse(table)`` gives two tables: ``<table>_runs`` (one row per usable run, provenance as JSON
text) and ``<table>_reps`` (one row per repetition and phase, the bad ones left out), and the
diagnostics ``source: reason`` in the order the lines came.
"""
import datetime
import json

import numpy as np

from contract.perflog import parse_params
from postprocess.history import engine

# (name, SQL type) of a text run
TEXT_COLUMNS = (
    ('run_id', 'BIGINT'), ('source', 'VARCHAR'), ('bad', 'VARCHAR'), ('t', 'DOUBLE'),
    ('tzoff', 'INTEGER'), ('system', 'VARCHAR'), ('partition', 'VARCHAR'), ('environ', 'VARCHAR'),
    ('check', 'VARCHAR'), ('params', 'VARCHAR'), ('jobid', 'VARCHAR'), ('result', 'VARCHAR'),
    ('reframe', 'VARCHAR'), ('reps_text', 'VARCHAR'), ('prov_text', 'VARCHAR'),
    ('perf', 'STRUCT(name VARCHAR, text VARCHAR, value DOUBLE, unit VARCHAR, ref DOUBLE, '
             'lower DOUBLE, upper DOUBLE)[]'),
    ('session', 'VARCHAR'), ('session_start', 'DOUBLE'), ('session_tzoff', 'INTEGER'),
    ('testcase', 'VARCHAR'))

RUNS_SQL = r"""
SELECT run_id, source, t, tzoff, system, partition, environ, "check", params, jobid, result,
       reframe, session, session_start, session_tzoff, testcase,
       CASE WHEN prov_text = '' THEN '{{}}'
            WHEN json_valid(prov_text) THEN prov_text
            ELSE json_object('raw', prov_text) END AS provenance,
       list_transform(coalesce(perf, []), p -> struct_pack(name := p.name, value := p.value,
                      unit := p.unit, ref := p.ref, lower := p.lower, upper := p.upper)) AS perf
FROM {text}
WHERE bad IS NULL AND params NOT IN ('null', 'None', '')
  AND NOT coalesce({params_bad}, false)
"""

# the items of iob_reps ('write=B:S,B:S;read=B:S'): the later part of a phase named twice
# winning (as a dict would), its items in order, numbers or NULL
ITEMS_SQL = r"""
WITH parts AS (
  SELECT run_id, unnest(string_split(trim_ends(reps_text), ';')) AS part,
         generate_subscripts(string_split(trim_ends(reps_text), ';'), 1) AS pi
  FROM {text} WHERE run_id IN (SELECT run_id FROM {suspect})),
named AS (
  SELECT run_id, pi, trim(split_part(part, '=', 1)) AS phase,
         part[strpos(part, '=') + 1:] AS items
  FROM parts WHERE part <> '' AND strpos(part, '=') > 0 AND trim(split_part(part, '=', 1)) <> ''
  QUALIFY pi = max(pi) OVER (PARTITION BY run_id, trim(split_part(part, '=', 1)))),
items AS (
  SELECT run_id, pi, phase, unnest(string_split(items, ',')) AS item,
         generate_subscripts(string_split(items, ','), 1) AS ii
  FROM named),
nums AS (
  SELECT run_id, pi, ii, phase, item,
         to_double(split_part(item, ':', 1)) AS bytes,
         CASE WHEN strpos(item, ':') > 0
              THEN to_double(item[strpos(item, ':') + 1:]) END AS seconds,
         coalesce(isfinite(bytes) AND isfinite(seconds) AND bytes >= 0 AND seconds > 0, false) AS ok
  FROM items WHERE item <> '')
"""

# one row per usable repetition: list functions per run, an unnest per phase, then per
# repetition (a phase named twice: its later part wins, as a dict would)
REPS_SQL = r"""
WITH p AS (
  SELECT run_id, list_filter(string_split(trim_ends(reps_text), ';'),
                             x -> strpos(x, '=') > 0 AND trim(split_part(x, '=', 1)) <> '') AS parts
  FROM {text} SEMI JOIN {runs} USING (run_id)),
q AS (
  SELECT run_id, list_filter(parts, (x, i) -> NOT list_contains(
           list_transform(parts[i + 1:], y -> trim(split_part(y, '=', 1))),
           trim(split_part(x, '=', 1)))) AS parts
  FROM p)
SELECT run_id, ph.phase, (generate_subscripts(ph.items, 1) - 1)::INTEGER AS rep,
       unnest(ph.items, recursive := true)
FROM (SELECT run_id, unnest(list_transform(parts, x -> {{'phase': trim(split_part(x, '=', 1)),
        'items': list_filter(list_transform(string_split(x[strpos(x, '=') + 1:], ','),
                   it -> {{'bytes': to_double(split_part(it, ':', 1)),
                          'seconds': CASE WHEN strpos(it, ':') > 0
                                          THEN to_double(it[strpos(it, ':') + 1:]) END}}),
                 y -> isfinite(y.bytes) AND isfinite(y.seconds) AND y.bytes >= 0
                      AND y.seconds > 0)}})) AS ph
      FROM q)
"""

# runs whose iob_reps has something that is not a usable repetition (their diagnostics are
# worked out item by item; the others cost one count)
SUSPECT_SQL = r"""
SELECT r.run_id FROM (SELECT run_id, reps_text FROM {text} SEMI JOIN {runs} USING (run_id)) r
LEFT JOIN (SELECT run_id, count(*) AS n FROM {reps} GROUP BY run_id) c
  USING (run_id)
WHERE coalesce(c.n, 0) <> len(string_split(reps_text, ':')) - 1
   OR list_bool_or(list_transform(string_split(trim_ends(reps_text), ';'),
                   x -> x <> '' AND (strpos(x, '=') = 0 OR trim(split_part(x, '=', 1)) = '')))
"""

PARAMS_BAD = "list_bool_or(list_transform(string_split(params, ','), x -> x <> '' AND strpos(x, '=') < 2))"

# why a text run, or a part of it, is not used: (run_id, order, message)
DIAG_SQL = ITEMS_SQL + r"""
SELECT run_id, 0 AS o, bad AS message FROM {text} WHERE bad IS NOT NULL
UNION ALL
SELECT run_id, 1, 'iob_params item without key=value: ' || pyrepr(list_filter(
         string_split(params, ','), x -> x <> '' AND strpos(x, '=') < 2)[1]) || ' (skipped)'
FROM {text} WHERE bad IS NULL AND params NOT IN ('null', 'None', '') AND {params_bad}
UNION ALL
SELECT run_id, 2, 'iob_provenance is not JSON (kept as text)' FROM {text}
WHERE run_id IN (SELECT run_id FROM {runs}) AND prov_text <> '' AND NOT json_valid(prov_text)
UNION ALL
SELECT run_id, 3, 'non-numeric value ' || p.name || '=' || pyrepr(p.text) || ' (perf value ignored)'
FROM (SELECT run_id, unnest(perf) AS p FROM {text} WHERE run_id IN (SELECT run_id FROM {runs}))
WHERE p.value IS NULL AND p.text NOT IN ('', 'None')
UNION ALL
SELECT run_id, 4 + pi, 'iob_reps part without phase=...: ' || pyrepr(part) || ' (skipped)'
FROM parts
WHERE part <> '' AND (strpos(part, '=') = 0 OR trim(split_part(part, '=', 1)) = '')
UNION ALL
SELECT run_id, 4 + pi + ii / 1e6,
       CASE WHEN bytes IS NULL OR seconds IS NULL THEN 'non-numeric' ELSE 'impossible' END
       || ' repetition ' || phase || '=' || pyrepr(item) || ' (skipped)'
FROM nums WHERE NOT ok
"""


def parse(text):
    """(runs table, reps table, diagnostics) of the text runs in table ``text``."""
    con = engine.connect()
    runs, reps = f'{text}_runs', f'{text}_reps'
    con.execute(f'CREATE OR REPLACE TEMP TABLE {runs} AS {RUNS_SQL.format(text=text, params_bad=PARAMS_BAD)}')
    con.execute(f'CREATE OR REPLACE TEMP TABLE {reps} AS {REPS_SQL.format(text=text, runs=runs)}')
    con.execute(f'CREATE OR REPLACE TEMP TABLE {text}_suspect AS '
                f'{SUSPECT_SQL.format(text=text, runs=runs, reps=reps)}')
    return runs, reps


def diagnostics(text, runs):
    """['source: reason', ...] in the order of the text runs (lines)."""
    con = engine.connect()
    diag = DIAG_SQL.format(text=text, runs=runs, params_bad=PARAMS_BAD, suspect=f'{text}_suspect')
    sql = (f'WITH d AS ({diag}) SELECT x.source, d.message FROM d JOIN {text} x USING (run_id) '
           f'ORDER BY d.run_id, d.o')
    return [f'{source}: {message}' for source, message in con.execute(sql).fetchall()]


def records(runs, reps, where=''):
    """Run records (dicts: time, key fields, param_dict, jobid, result, reps, perf,
    provenance, reframe, session, session_start, source) of the parsed tables, oldest first."""
    con = engine.connect()
    got = con.execute(
        f'SELECT run_id, source, t, tzoff, system, partition, environ, "check", params, jobid, '
        f'result, reframe, session, session_start, session_tzoff, provenance, to_json(perf) '
        f'FROM {runs} {where} ORDER BY t, run_id').fetchall()
    ids = [g[0] for g in got]
    reps_of = {}
    if ids:
        name = engine.temp_name('wanted')
        con.register(name, {'run_id': np.asarray(ids, dtype='int64')})
        for run_id, phase, b, s in con.execute(
                f'SELECT run_id, phase, bytes, seconds FROM {reps} SEMI JOIN {name} USING (run_id) '
                f'ORDER BY run_id, phase, rep').fetchall():
            reps_of.setdefault(run_id, {}).setdefault(phase, []).append((b, s))
        con.unregister(name)
    zones = {}
    out = []
    for (run_id, source, t, tz, system, partition, environ, check, params, jobid, result,
         reframe, session, st, stz, prov, perf) in got:
        zone = zones.setdefault(tz, datetime.timezone(datetime.timedelta(seconds=tz)))
        record = {
            'time': datetime.datetime.fromtimestamp(t, zone), 'system': system,
            'partition': partition, 'environ': environ, 'check': check, 'params': params,
            'param_dict': parse_params(params), 'jobid': jobid, 'result': result,
            'reps': reps_of.get(run_id, {}), 'provenance': json.loads(prov),
            'perf': {p['name']: {k: p[k] for k in ('value', 'unit', 'ref', 'lower', 'upper')}
                     for p in json.loads(perf)},
            'reframe': reframe, 'session': session, 'source': source}
        if session:
            record['session_start'] = datetime.datetime.fromtimestamp(
                st, zones.setdefault(stz, datetime.timezone(datetime.timedelta(seconds=stz))))
        out.append(record)
    return out
