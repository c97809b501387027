"""Real nights on one machine: `ci/nightly.sh` runs into one results tree, each run's perflog lines
re-dated to its own night afterwards, and iobench made genuinely slower by tests/support/iofault.c (an
LD_PRELOAD library). Shared by bench/real_replay.py and tests/test_verdicts_e2e.py
(`from bench import nights`).

Re-dating: a run's perflog lines carry today's date while it judges itself; afterwards they are moved
(in place, same length) to their own past night, so the next run sees them as history.
"""
import datetime
import json
import os
import re
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a perflog data line opens with its completion time, '%Y-%m-%dT%H:%M:%S%z' (configs/settings.py)
DATED = re.compile(rb'\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{4}')
NIGHT_OPENS = datetime.time(20, 0)      # a re-dated night's first line
FIRST_NIGHT = datetime.date(2026, 1, 1)        # the re-dated nights: 2026-01-01, -02, ...

# Faults of a realistic size: +25 % time on the calls of a phase is -20 % bandwidth.
FAULTS = {
    # every write and sync +25 % of its own time, paid in kind (a quarter of the bytes again, out to
    # the device before the file's sync): slept, the delay was absorbed by the other rank's I/O,
    # x1.07-1.20 on 2-rank BenchIO phases side by side, x1.20-1.29 in kind (measured by
    # bench/fault_size.py, now in git history)
    'write': {'IOFAULT_PHASE': 'write', 'IOFAULT_FACTOR': '0.25'},
    # HDF5's files only. At +25 % it realized x1.16 and x1.19 on the 2-rank BenchIO HDF5 checks
    # (independent, collective; their phase spends more outside write+sync: H5Fcreate, the
    # library's metadata, H5Fclose) where the POSIX fpp one took x1.23 beside them; +35 % realized
    # x1.24 and x1.33 (bench/fault_size.py --fault hdf5 --factor F, 6-8 pairs, 2026-11-27; in git
    # history), as the read fault is sized by what it realizes
    'hdf5': {'IOFAULT_PHASE': 'write', 'IOFAULT_FACTOR': '0.35', 'IOFAULT_MATCH': 'iobench_hdf5_'},
    # a read phase spends more of its time outside read calls (open, MPI, HDF5/ADIOS2 decoding)
    # than a write phase outside write+fsync: +25 % on the read calls realized -15 % read
    # bandwidth side by side on the 256 MiB checks (POSIX -19, MPI-IO -21, HDF5 -9, ADIOS2
    # -12 %), +30 % realized -19 % (docs/verdicts.md, run 13)
    'read': {'IOFAULT_PHASE': 'read', 'IOFAULT_FACTOR': '0.30'},
    # every create/open/stat/unlink/mkdir/rmdir, and close of what such an open opened, +25 % of
    # its own time, on iobench's files only (not its libraries, /proc...): a ~20 % slower metadata
    # service. (It was +0.7 ms per call, ~50x an empty-file create here: no realistic size.) A
    # create pays in kind, with dummy creates in its directory (tests/support/iofault.c pay_in_kind).
    'meta': {'IOFAULT_PHASE': 'meta', 'IOFAULT_FACTOR': '0.25', 'IOFAULT_MATCH': 'iobench_'},
    # every write and sync four times its time, paid in kind: a quarter of the write bandwidth,
    # a fall no night of this machine makes by itself, far even for the 17 spreads Student's t asks
    # on 5 usual nights of the stack (tests/test_verdicts_e2e.py; half the bandwidth was not, loaded)
    'write-quarter': {'IOFAULT_PHASE': 'write', 'IOFAULT_FACTOR': '3.0'},
}


def night_of(i):
    return (FIRST_NIGHT + datetime.timedelta(days=i)).isoformat()


def build_fault_lib(out_dir):
    """Compile tests/support/iofault.c into OUT_DIR/libiofault.so (needs cc)."""
    lib = Path(out_dir) / 'libiofault.so'
    subprocess.run(['cc', '-shared', '-fPIC', '-O2', '-o', str(lib),
                    str(REPO / 'tests' / 'support' / 'iofault.c'), '-ldl'], check=True, capture_output=True)
    return lib


def perflog_sizes(results):
    perflogs = Path(results) / 'perflogs'
    return {p: p.stat().st_size for p in perflogs.rglob('*.log')} if perflogs.exists() else {}


def redate_perflogs(perflogs, sizes, night, shift=None):
    """Move the lines of a perflog directory appended since ``sizes`` (path -> bytes) to
    ``night`` (YYYY-MM-DD), in place (same length): the run's first line to 20:00 UTC of that
    night, every other line at its offset from it (returned: that shift in seconds, None without
    a line; tests/test_results_db_e2e.py moves the DB by it). Every appended data line is the
    run's, whatever its date, and it stays one session (runs under history.sessions.SESSION_GAP
    apart): a run that crossed midnight kept its clock times as two nights (run 27.1: a night
    begun at 23:58 kept 24 of its 26 lines at the real date; moved to its night's date, the two
    after midnight joined the night before, two minutes from its last line). ``shift`` (seconds):
    move every line by it instead (a run's confirmation re-run, by its run's shift)."""
    appended = []
    for path in Path(perflogs).rglob('*.log'):
        with open(path, 'rb') as fp:
            fp.seek(sizes.get(path, 0))
            lines = fp.read().split(b'\n')
        stamps = [datetime.datetime.fromisoformat(ln[:24].decode()) if DATED.match(ln) else None
                  for ln in lines]
        appended.append((path, lines, stamps))
    first = min((s for _, _, stamps in appended for s in stamps if s), default=None)
    if first is None:
        return None
    opens = datetime.datetime.combine(datetime.date.fromisoformat(night), NIGHT_OPENS,
                                      tzinfo=datetime.timezone.utc)
    delta = opens - first if shift is None else datetime.timedelta(seconds=shift)
    for path, lines, stamps in appended:
        lines = [(s + delta).strftime('%Y-%m-%dT%H:%M:%S+0000').encode() + ln[24:]
                 if s else ln for ln, s in zip(lines, stamps)]
        with open(path, 'r+b') as fp:
            fp.seek(sizes.get(path, 0))
            fp.write(b'\n'.join(lines))
    return delta.total_seconds()


def today():
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def redate_store(results, run_name, shift):
    """The run's files of the results store moved by ``shift`` seconds (times, its session's
    start, night and year: a file of system=<s>/year=<y>/ of its new night), as its perflog
    lines were: the next nightly reads it as that past night."""
    import duckdb
    store = Path(results) / 'store'
    # the run table holds the times (and the one-table file of before); its repetitions move along
    for path in list(store.glob(f'system=*/year=*/{run_name}.runs.parquet')) + \
            list(store.glob(f'system=*/year=*/{run_name}.parquet')):
        con = duckdb.connect()
        moved = (f"SELECT * REPLACE (time + INTERVAL ({shift}) SECOND AS time, "
                 f"session_start + INTERVAL ({shift}) SECOND AS session_start, "
                 f"CAST(make_timestamp(CAST((epoch(session_start) + {shift} + session_utc_offset) "
                 f"* 1e6 AS BIGINT)) AS DATE) AS night, "
                 f"year(make_timestamp(CAST((epoch(session_start) + {shift} + session_utc_offset) "
                 f"* 1e6 AS BIGINT))) AS year) FROM read_parquet('{path}')")
        year = con.execute(f'SELECT any_value(year) FROM ({moved})').fetchone()[0]
        target = path.parent.parent / f'year={year}' / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f'.{path.name}.redate.tmp'
        con.execute(f"COPY ({moved}) TO '{tmp}' (FORMAT parquet)")
        con.close()
        path.unlink()
        tmp.rename(target)
        reps = path.with_name(f'{run_name}.reps.parquet')
        if path.name.endswith('.runs.parquet') and reps.exists():
            reps.rename(target.with_name(reps.name))


def redate(results, sizes, night, dates):
    """A run's perflog lines (appended since ``sizes``), its file of the results store, its
    confirmation re-run and its findings moved to ``night``; ``dates``: the real dates the run
    spanned (its findings' nights and `since` on them move). Returned: redate_perflogs' shift."""
    shift = redate_perflogs(Path(results) / 'perflogs', sizes, night)
    latest = Path(results) / 'latest'
    if shift is not None and latest.exists():
        redate_store(results, latest.resolve().name, shift)
    confirm = latest / 'confirm' / 'perflogs'
    if shift is not None and confirm.exists():
        # the confirmation re-run is data of this night (detect --runs): moved with the run
        redate_perflogs(confirm, {}, night, shift)
    # the run's findings name its night too (kept as the nightly said them)
    for name in ('verdict.json', 'detect.json'):
        path = latest / 'post' / name
        if not path.exists():
            continue
        doc = json.loads(path.read_text())
        for f in doc.get('findings', []) if isinstance(doc, dict) else doc:
            for k in ('night', 'since'):
                if str(f.get(k, ''))[:10] in dates:
                    f[k] = night + str(f[k])[10:]
        path.write_text(json.dumps(doc, indent=1))
    return shift


def describe_fs(path):
    """The filesystem under ``path``: its device, type and, for ext4, whether it has a journal. ext4
    without one skips inodes freed a short while ago when it allocates (ext4's recently_deleted()), so
    a create's cost there depends on what was deleted before it (docs/local-fs.md)."""
    dev = os.stat(path).st_dev
    numbers = f'{os.major(dev)}:{os.minor(dev)}'
    name = Path(f'/sys/dev/block/{numbers}').resolve().name
    # mountinfo names each mount's device numbers: no stat of every mount point (a dead NFS mount)
    fstype = next((line.split(' - ')[1].split()[0] for line in
                   Path('/proc/self/mountinfo').read_text().splitlines()
                   if line.split()[2] == numbers), '?')
    task = Path(f'/sys/fs/ext4/{name}/journal_task')
    journal = ('none' if task.read_text().strip() == '<none>' else 'yes') if task.exists() else '?'
    return {'path': str(path), 'device': name, 'fs': fstype, 'journal': journal}


def base_env():
    # the results DB is off: nights are re-dated in the perflogs only, the DB would keep them on
    # today's date (tests/test_results_db_e2e.py re-dates both)
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
                IOREGRESS_RESULTS_DB='off')


def nightly(results, names=(), env=None, timeout=3600):
    """One `ci/nightly.sh --tag quick --system local` into ``results``: the CompletedProcess."""
    cmd = [str(REPO / 'ci' / 'nightly.sh'), '--tag', 'quick', '--system', 'local',
           '--results', str(results)]
    for n in names:
        cmd += ['--name', n]
    return subprocess.run(cmd, capture_output=True, text=True, env=env or base_env(),
                          timeout=timeout)


def run_night(results, i, names=(), fault=None, lib=None, env=None, timeout=3600):
    """One nightly (quick suite on `local`) as night ``i`` (0-based), then re-dated.

    Returns {night, exit, verdict (verdict.json or None), out (the tail of its output), seconds}."""
    run_env = dict(env or base_env())
    if fault:
        run_env.update(FAULTS[fault], LD_PRELOAD=str(lib))
    sizes = perflog_sizes(results)
    t0, started = time.monotonic(), today()
    proc = nightly(results, names, run_env, timeout)
    seconds = time.monotonic() - t0
    redate(results, sizes, night_of(i), {started, today()})     # the verdict's nights too
    post = Path(results) / 'latest' / 'post'
    verdict, detect = (json.loads((post / name).read_text()) if (post / name).exists() else None
                       for name in ('verdict.json', 'detect.json'))
    return {'night': night_of(i), 'exit': proc.returncode, 'verdict': verdict, 'detect': detect,
            'fault': fault, 'seconds': round(seconds, 1),
            'out': proc.stdout[-6000:] + proc.stderr[-2000:]}
