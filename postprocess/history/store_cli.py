"""``import``: the results store from a site's perflogs and ReFrame results DB; ``store-run``: a
completed nightly's runs into the store (ci/nightly.sh, its last step). docs/operations.md."""
import dataclasses
import os
import sys

from postprocess.common.errors import UsageError
from postprocess.history import engine, inputs, perflog, store
from postprocess.history.cli import add_history_args, print_warnings, query_of


def register(subparsers):
    p = subparsers.add_parser('import', help="results store <- a site's perflogs and results DB "
                                             '(run it again: what the same sources gave is replaced)')
    add_history_args(p)
    p.set_defaults(func=run_import)
    r = subparsers.add_parser('store-run', help="a completed nightly's runs (RUN/report.json) "
                                                'into the results store')
    r.add_argument('--run', required=True, metavar='RUN_DIR', help='the nightly run directory')
    r.add_argument('--store', required=True, metavar='DIR', help='the results store')
    r.set_defaults(func=run_store_run)


def default_store(args):
    """<results>/store beside <results>/perflogs (or beside the DB)."""
    first = args.perflogs[0] if args.perflogs else args.db
    parent = os.path.dirname(os.path.abspath(first.rstrip('/')))
    return os.path.join(parent, 'store')


def run_import(args):
    if not args.perflogs and not args.db:
        raise UsageError('give --perflogs DIR and/or --db FILE')
    target = args.store or default_store(args)
    # the store is the output here, not a source
    query = dataclasses.replace(query_of(args), store=None, this_run=None)
    inputs.check(query)
    if os.path.exists(target) and not os.path.isdir(target):
        raise UsageError(f"not a directory: --store '{target}'")
    diag = perflog.Diagnostics()
    warnings = []
    runs, reps = inputs.source_parsed(query, diag, warnings) or (None, None)
    con = engine.connect()
    name = f'import-{store.source_id(*args.perflogs, *([args.db] if args.db else []))}'
    where = inputs.row_filter(query)
    # runs the store holds already (nightlies, other imports) are not added twice; this import's
    # own earlier files are replaced whole, so what they hold is not "already there"
    others = [p for p in store.files(target) if not os.path.basename(p).startswith(name)]
    if others:
        where += (f' AND NOT EXISTS (SELECT 1 FROM {store.runs_scan_sql(others)} s WHERE '
                  f's.system = e.system AND s.partition = e.partition AND s.environ = e.environ '
                  f'AND s."check" = e."check" AND s.jobid = e.jobid AND '
                  f'floor(epoch(s.time)) = floor(epoch(e.time)))')
    chosen = engine.temp_name('import_runs')
    if runs:        # one row per run (10^6 at most), kept: both tables are written from it
        con.execute(f'CREATE TEMP TABLE {chosen} AS SELECT * FROM '
                    f'({store.run_rows_sql(runs, "")}) e WHERE {where}')
        con.execute(f'DROP TABLE {runs}')      # its memory to the writes (no spilling)
    nruns = con.execute(f'SELECT count(*) FROM {chosen}').fetchone()[0] if runs else 0
    if not nruns:
        raise UsageError(f"nothing to import from {', '.join(args.perflogs + ([args.db] if args.db else []))}"
                         f" that '{target}' does not hold already")
    written, nreps = store.write(chosen, reps, target, name)
    print(f'{nruns} runs, {nreps} repetitions -> {len(written)} files in {target}')
    print_warnings(warnings + inputs.diag_warnings(diag))
    return 0


def run_store_run(args):
    if not os.path.isdir(args.run):
        raise UsageError(f"no such run directory '{args.run}'")
    if os.path.exists(args.store) and not os.path.isdir(args.store):
        raise UsageError(f"not a directory: --store '{args.store}'")
    from postprocess.history import parse, reports
    report = os.path.join(args.run, 'report.json')
    if not os.path.exists(report):
        print(f"store-run: no '{report}': nothing stored", file=sys.stderr)
        return 0
    try:
        cases = reports.read_report(report)
    except ValueError as err:
        raise UsageError(f"unreadable ReFrame report '{report}': {err}") from None
    text = reports.text_table(cases)
    runs, reps = parse.parse(text)
    name = os.path.basename(os.path.normpath(args.run))
    con = engine.connect()
    chosen = engine.temp_name('night_runs')
    con.execute(f'CREATE TEMP TABLE {chosen} AS SELECT * FROM ({store.run_rows_sql(runs, name)}) '
                f'ORDER BY time, seq')
    nruns = con.execute(f'SELECT count(*) FROM {chosen}').fetchone()[0]
    if not nruns:
        print(f'store-run: no measurement in {report}: nothing stored', file=sys.stderr)
        return 0
    ordered = engine.temp_name('night_reps')
    con.execute(f'CREATE TEMP TABLE {ordered} AS SELECT * FROM {reps} ORDER BY run_id, phase, rep')
    written, nreps = store.write(chosen, ordered, args.store, name)
    print(f'{nruns} runs, {nreps} repetitions -> {", ".join(written)}')
    return 0

