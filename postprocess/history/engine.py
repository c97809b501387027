"""The embedded analytical engine: one DuckDB connection per process, set up the same way for
every reader and writer of history (the results store, perflogs, ReFrame's results DB).

DuckDB comes from PyPI with Parquet, JSON and ICU built in; nothing is downloaded at run time
(``autoinstall_known_extensions`` off), so a compute node without network reads the store too.
"""
import os

import duckdb

import ioregress_env

_CON = None

# SQL helpers every history query may use (perflog.py, parse.py, sessions.py)
MACROS = r"""
CREATE OR REPLACE MACRO perf_head(x) AS regexp_matches(x, '^\w+_var=\w+_value$')
  AND regexp_extract(x, '^(\w+)_var=', 1) || '_value' = x[strpos(x, '=') + 1:];
-- TRY_CAST(trim(x) AS DOUBLE): the cast itself skips ASCII spaces; trim (a walk over the text)
-- only where the cast fails, for the other space separators trim cuts
CREATE OR REPLACE MACRO to_double(x) AS coalesce(TRY_CAST(x AS DOUBLE), TRY_CAST(trim(x) AS DOUBLE));
-- a cast that fails is slow: the 'None' ReFrame logs for a threshold not given is not tried
CREATE OR REPLACE MACRO finite_or_null(x) AS
  CASE WHEN x IN ('None', '') THEN NULL WHEN isfinite(to_double(x)) THEN to_double(x) END;
-- trim(x) and rtrim(x, c) walk the whole string (a line, an iob_reps): called only where an end
-- shows something to cut (what trim cuts is a space or a non-ASCII space separator; c is one
-- character)
CREATE OR REPLACE MACRO trim_ends(x) AS
  CASE WHEN ord(left(x, 1)) BETWEEN 33 AND 127 AND NOT regexp_matches(x, '[^!-\x7f]$')
       THEN x ELSE trim(x) END;
CREATE OR REPLACE MACRO rtrim_char(x, c) AS CASE WHEN ends_with(x, c) THEN rtrim(x, c) ELSE x END;
CREATE OR REPLACE MACRO pyrepr(s) AS
  CASE WHEN contains(s, '''') AND NOT contains(s, '"')
       THEN '"' || replace(s, '\', '\\') || '"'
       ELSE '''' || replace(replace(s, '\', '\\'), '''', '\''') || '''' END;

CREATE OR REPLACE MACRO local_ts(t, tz) AS make_timestamp(CAST(round((t + tz) * 1e6) AS BIGINT));
CREATE OR REPLACE MACRO iso_zone(tz) AS (CASE WHEN tz < 0 THEN '-' ELSE '+' END)
  || lpad(CAST(abs(tz) // 3600 AS VARCHAR), 2, '0') || ':'
  || lpad(CAST(abs(tz) % 3600 // 60 AS VARCHAR), 2, '0');
CREATE OR REPLACE MACRO iso_time(t, tz) AS strftime(local_ts(t, tz), '%Y-%m-%dT%H:%M:%S')
  || CASE WHEN round(t * 1e6) % 1000000 <> 0
          THEN '.' || lpad(CAST(CAST(round(t * 1e6) % 1000000 AS BIGINT) AS VARCHAR), 6, '0')
          ELSE '' END
  || iso_zone(tz);
"""


def connect():
    """The process's connection (in memory; spills to the system temp directory past its
    memory limit, so an import of years of perflogs stays within a node's memory)."""
    global _CON
    if _CON is None:
        con = duckdb.connect(':memory:')
        con.execute('SET autoinstall_known_extensions = false')
        con.execute("SET TimeZone = 'UTC'")
        limit = ioregress_env.get('IOREGRESS_DUCKDB_MEMORY')
        con.execute(f"SET memory_limit = '{limit}'")
        con.execute(f"SET temp_directory = '{_sql_str(_temp_dir())}'")
        con.execute(MACROS)
        _CON = con
    return _CON


def _temp_dir():
    """This process's own spill directory (DuckDB names its spill files alike in every process:
    two processes sharing one directory read each other's; DuckDB removes it at exit)."""
    import tempfile
    return os.path.join(tempfile.gettempdir(), f'ioregress-duckdb-{os.getuid()}-{os.getpid()}')


def _sql_str(text):
    return str(text).replace("'", "''")


def quote(text):
    """A SQL string literal."""
    return "'" + _sql_str(text) + "'"


def ident(name):
    """A SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def temp_name(prefix):
    """A fresh name for a temporary table or view of this connection."""
    temp_name.n = getattr(temp_name, 'n', 0) + 1
    return f'{prefix}_{temp_name.n}'
