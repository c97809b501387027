"""The embedded analytical engine: one DuckDB connection per process, set up the same way for
every reader and writer of history (the results store, perflogs, ReFrame's results DB).

DuckDB comes from PyPI with Parquet, JSON and ICU built in; nothing is downloaded at run time
(``autoinstall_known_extensions`` off), so a compute node without network reads the store too.
"""
import os

import duckdb

_CON = None


def connect():
    """The process's connection (in memory; spills to the system temp directory past its
    memory limit, so an import of years of perflogs stays within a node's memory)."""
    global _CON
    if _CON is None:
        con = duckdb.connect(':memory:')
        con.execute('SET autoinstall_known_extensions = false')
        con.execute("SET TimeZone = 'UTC'")
        limit = os.environ.get('IOREGRESS_DUCKDB_MEMORY', '1GB')
        con.execute(f"SET memory_limit = '{limit}'")
        con.execute(f"SET temp_directory = '{_sql_str(_temp_dir())}'")
        _CON = con
    return _CON


def _temp_dir():
    import tempfile
    return os.path.join(tempfile.gettempdir(), f'ioregress-duckdb-{os.getuid()}')


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
