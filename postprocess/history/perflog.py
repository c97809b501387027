"""Read ReFrame perflogs (docs/CONTRACT.md section 3) into the engine: one text run per line.

ReFrame's filelog handler writes one ``|``-separated line per test run and a header line when it
creates the file; when the format changes it renames the old file to ``<name>.h<N>`` and starts a
new one with a new header. The header names the fields, so lines are mapped by the most recent
header seen in the same file (a header may also appear mid-file when logs are concatenated). Perf
variables appear in the header as
``<var>_var=<var>_value|<var>_unit|<var>_ref|<var>_lower_thres|<var>_upper_thres`` and in data
lines as ``<var>=<value>|<unit>|<ref>|<lower>|<upper>``. Checks of one class may log other
variables than the header names (a +gpfs read that could not defeat the cache logs
read_cache_defeated instead of read_bw): such a line's perf groups are read from the line itself.

DuckDB reads each file into a table of numbered lines; the fields, the header each line falls
under, the times and perf values are SQL on it (``TEXT_RUNS_SQL``), and so are the reasons a line
is skipped, ``file:line: reason`` (``history/parse.py`` goes on with parameters and repetitions).
"""
import datetime
import os
import re

from contract.perflog import FIELDS
from postprocess.history import engine, parse
from postprocess.history.parse import TEXT_COLUMNS

_ROTATED = re.compile(r'\.log(\.h\d+)?$')


class Diagnostics(list):
    """Messages ``file:line: text`` about input that was skipped or only partly used."""

    def add(self, where, text):
        self.append(f'{where}: {text}')


def find_perflogs(root):
    """Perflog files under ``root`` (a file or a directory tree): ``*.log`` and ``*.log.h<N>``."""
    root = os.fspath(root)
    if os.path.isfile(root):
        return [root]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        found += [os.path.join(dirpath, f) for f in sorted(filenames) if _ROTATED.search(f)]
    return found


def _lines_sql(path):
    """SELECT lineno, line of one file, read by DuckDB's CSV reader as one column (rows are
    lines; a line that is not UTF-8 reads as NULL, as a blank one). Numbering the lines is a
    single-threaded window: nothing else is done in it (the caller keeps the result as a table
    and works on that in parallel)."""
    return (f"SELECT row_number() OVER () AS lineno, line FROM read_csv({engine.quote(path)}, "
            f"header = false, delim = chr(1), quote = '', escape = '', new_line = '\\n', "
            f"columns = {{'line': 'VARCHAR'}}, auto_detect = false, strict_mode = false, "
            f"ignore_errors = true)")


# Header lines -> (file, lineno, fixed field names, perf variable names); a line that opens like
# a header but is not one in a layout we know is read as a data line (and fails as one).
HEADERS_SQL = r"""
SELECT file, lineno, list_slice(f, 1, nfixed) AS fixed,
       list_transform(range(nfixed + 1, len(f) + 1, 5),
                      i -> regexp_extract(f[i], '^(\w+)_var=', 1)) AS perfvars
FROM (SELECT file, lineno, f,
             coalesce(list_position(list_transform(f, x -> perf_head(x)), true) - 1, len(f))
               AS nfixed
      FROM (SELECT file, lineno, string_split(rtrim_char(line, '|'), '|') AS f
            FROM {chunk} WHERE starts_with(line, 'job_completion_time|')
               OR line = 'job_completion_time'))
WHERE list_bool_and(list_transform(range(nfixed + 1, len(f) + 1, 5), i -> perf_head(f[i])))
   IS NOT false
"""

# Data lines -> text runs; ``bad`` names why a line is skipped (NULL: used). Each line falls under
# the last header before it in its file: {header_of} is a CASE over the (few) header line numbers,
# so the lines stream through a hash join instead of being sorted (an ASOF join sorted them all:
# out of memory at 10^6 lines under the engine's 1 GB limit).
LINES_SQL = r"""
SELECT c.file, c.lineno, c.f,
       coalesce(h.fixed, {contract}) AS fixed,
       CASE WHEN h.fixed IS NULL
            THEN list_transform(range(0, greatest(len(c.f) - {ncontract}, 0) // 5), k -> 'perf' || k)
            ELSE h.perfvars END AS hvars,
       h.fixed IS NULL AS headless
FROM (SELECT file, lineno, string_split(rtrim_char(line, '|'), '|') AS f,
             {header_of} AS header_line
      FROM {chunk} WHERE NOT regexp_matches(line, '^\s*$') AND lineno NOT IN {header_lines}) c
LEFT JOIN {headers} h ON c.file = h.file AND c.header_line = h.lineno
"""

TEXT_RUNS_SQL = r"""
WITH l AS ({lines}),
m AS (
  SELECT *, len(fixed) AS nfixed, len(fixed) + 5 * len(hvars) AS expected,
         len(f) - len(fixed) AS own,
         f[list_position(fixed, 'job_completion_time')] AS time_text
  FROM l),
s AS (
  SELECT *,
    CASE WHEN headless AND (own < 0 OR own % 5 <> 0)
           THEN 'line before any header and not in the contract layout (skipped)'
         WHEN len(f) <> expected AND NOT (own > 0 AND own % 5 = 0 AND list_bool_and(
                list_transform(range(nfixed + 1, len(f) + 1, 5), i -> regexp_matches(f[i], '^\w+='))))
           THEN 'expected ' || expected || ' fields, found ' || len(f)
                || ' (partial or corrupt line, skipped)'
    END AS bad_layout,
    regexp_extract(trim(coalesce(time_text, '')),
      '^(\d{{4}}-\d{{2}}-\d{{2}}T\d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)?)(Z|[+-]\d{{2}}:?\d{{2}})?$',
      ['local', 'zone']) AS tm
  FROM m),
t AS (
  SELECT *, try_strptime(replace(tm.local, 'T', ' '),
                         ['%Y-%m-%d %H:%M:%S', '%Y-%m-%d %H:%M:%S.%f']) AS local_ts,
         CASE WHEN tm.zone IN ('', 'Z') THEN 0
              ELSE (CASE WHEN tm.zone[1] = '-' THEN -1 ELSE 1 END)
                   * (CAST(tm.zone[2:3] AS INTEGER) * 3600 + CAST(tm.zone[-2:] AS INTEGER) * 60)
         END AS tzoff
  FROM s)
SELECT file, lineno,
  coalesce(bad_layout, CASE WHEN local_ts IS NULL THEN
    'bad job_completion_time ' || pyrepr(coalesce(time_text, 'None')) || ' (skipped)' END) AS bad,
  epoch(local_ts) - tzoff AS t, tzoff,
  coalesce(f[list_position(fixed, 'system')], '') AS system,
  coalesce(f[list_position(fixed, 'partition')], '') AS partition,
  coalesce(f[list_position(fixed, 'environ')], '') AS environ,
  coalesce(f[list_position(fixed, 'name')], f[list_position(fixed, 'check_name')], '') AS "check",
  coalesce(f[list_position(fixed, 'iob_params')], 'null') AS params,
  coalesce(f[list_position(fixed, 'jobid')], '') AS jobid,
  coalesce(f[list_position(fixed, 'result')], '') AS result,
  coalesce(f[list_position(fixed, 'reframe version')], '') AS reframe,
  coalesce(f[list_position(fixed, 'iob_reps')], '') AS reps_text,
  coalesce(f[list_position(fixed, 'iob_provenance')], '') AS prov_text,
  CASE WHEN bad_layout IS NULL THEN list_transform(range(0, (len(f) - nfixed) // 5), k -> {{
    'name': coalesce(nullif(split_part(f[nfixed + 1 + 5 * k], '=', 1), ''), hvars[k + 1]),
    'text': f[nfixed + 1 + 5 * k][strpos(f[nfixed + 1 + 5 * k], '=') + 1:],
    'value': finite_or_null(f[nfixed + 1 + 5 * k][strpos(f[nfixed + 1 + 5 * k], '=') + 1:]),
    'unit': f[nfixed + 2 + 5 * k],
    'ref': finite_or_null(f[nfixed + 3 + 5 * k]),
    'lower': finite_or_null(f[nfixed + 4 + 5 * k]),
    'upper': finite_or_null(f[nfixed + 5 + 5 * k])}}) END AS perf
FROM t
"""




def text_runs(roots, diag, nights=None):
    """The text runs (history/parse.py TEXT_COLUMNS) of every perflog line under ``roots``: a
    table name. ``run_id`` follows the order read (files in order, lines in order; header and
    blank lines take a number too), ``source`` is ``path:line``. ``nights``: only the lines
    completed on those dates (and every header): the cost then does not grow with the history.
    A root that does not exist, or a file that cannot be read, is a diagnostic."""
    con = engine.connect()
    name = engine.temp_name('perflog_runs')
    headers = engine.temp_name('perflog_headers')
    chunk = engine.temp_name('perflog_lines')
    cands = engine.temp_name('perflog_header_lines')
    con.execute(f'CREATE TEMP TABLE {headers} (file INTEGER, lineno BIGINT, fixed VARCHAR[], '
                f'perfvars VARCHAR[])')
    # lines before any header are read by the contract's fields (e.g. a header lost by hand editing)
    contract = '[' + ', '.join(engine.quote(f) for f in FIELDS) + ']'
    cols = ', '.join(f'NULL::{t} AS {engine.ident(n)}' for n, t in TEXT_COLUMNS)
    con.execute(f'CREATE TEMP TABLE {name} AS SELECT {cols} LIMIT 0')
    keep = ''
    if nights is not None:
        days = sorted(set(nights))
        keep = " WHERE starts_with(line, 'job_completion_time')" + (
            ' OR left(line, 10) IN (' + ', '.join(engine.quote(d) for d in days) + ')'
            if days else '')
    # every line is read through this (CR of CRLF cut): HEADERS_SQL and LINES_SQL cut the pipes
    clean = f"(SELECT lineno, rtrim_char(coalesce(line, ''), chr(13)) AS line FROM {chunk}"
    code, offset = 0, 0
    for root in ([roots] if isinstance(roots, (str, os.PathLike)) else roots):
        if not os.path.exists(root):
            diag.add(os.fspath(root), 'no such file or directory')
            continue
        for path in find_perflogs(root):
            code += 1
            try:
                with open(path, 'rb') as fp:
                    if not fp.read(1):
                        continue            # empty: DuckDB's reader would call it an error
            except OSError as err:
                diag.add(path, f'cannot read: {err.strerror}')
                continue
            con.execute(f'CREATE OR REPLACE TEMP TABLE {chunk} AS SELECT * FROM '
                        f'({_lines_sql(path)}){keep}')
            # headers (a filter on the numbered lines), then every line under its header
            # (the few candidates kept apart first: filtered inside HEADERS_SQL, every line was
            # split before the filter)
            con.execute(f"CREATE OR REPLACE TEMP TABLE {cands} AS SELECT {code} AS file, * FROM "
                        f"{clean} WHERE starts_with(line, 'job_completion_time'))")
            con.execute(f'INSERT INTO {headers} ' + HEADERS_SQL.format(chunk=cands))
            marks = [n for (n,) in con.execute(f'SELECT lineno FROM {headers} WHERE file = {code} '
                                               f'ORDER BY lineno DESC').fetchall()]
            header_of = ('CASE ' + ' '.join(f'WHEN lineno > {n} THEN {n}' for n in marks) + ' END'
                         if marks else 'NULL::BIGINT')
            runs = TEXT_RUNS_SQL.format(lines=LINES_SQL.format(
                chunk=f'(SELECT {code} AS file, * FROM {clean}))', headers=headers,
                contract=contract, ncontract=len(FIELDS), header_of=header_of,
                header_lines='(' + ', '.join(map(str, marks or [-1])) + ')'))
            con.execute(f'INSERT INTO {name} SELECT {offset} + lineno - 1 AS run_id, '
                        f'{engine.quote(path + ":")} || lineno AS source, * EXCLUDE (file, lineno), '
                        f'NULL, NULL, NULL, NULL FROM ({runs})')
            offset += con.execute(f'SELECT coalesce(max(lineno), 0) FROM {chunk}').fetchone()[0]
    con.execute(f'DROP TABLE {headers}; DROP TABLE IF EXISTS {chunk}; DROP TABLE IF EXISTS {cands}')
    return name


def read_perflogs(roots, diag=None, nights=None):
    """(run records, diagnostics) of every perflog line under ``roots``, oldest first."""
    diag = Diagnostics() if diag is None else diag
    text = text_runs(roots, diag, nights)
    runs, reps = parse.parse(text)
    diag.extend(parse.diagnostics(text, runs))
    return parse.records(runs, reps), diag


def runs_of_nights(roots, nights, system=None):
    """Run records (with provenance) of the perflog lines completed on ``nights`` (+1 day, for a
    session that crossed midnight): a line's first ten characters are its completion date, so
    only those lines are parsed and the cost does not grow with the history."""
    days = set()
    for n in nights:
        try:
            day = datetime.date.fromisoformat(n)
        except (TypeError, ValueError):
            continue
        days |= {day.isoformat(), (day + datetime.timedelta(days=1)).isoformat()}
    if not days:
        return []
    runs, _ = read_perflogs(roots, Diagnostics(), nights=days)
    return [r for r in runs if system is None or r['system'] == system]
