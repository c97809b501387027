"""Which perflog bytes belong to nightly runs that did not complete (docs/CONTRACT.md section 3).

ci/nightly.sh appends to the shared history ``<results>/perflogs/`` and keeps each run's files in
``<results>/runs/<run>/``. At its start it writes ``INCOMPLETE`` and ``perflogs.start`` (one line
per perflog file: ``<dev>:<inode>\\t<size>\\t<path under perflogs/>``); when stopped by a signal it
writes ``perflogs.end`` the same way; only at its very end it writes ``COMPLETE`` and removes
``INCOMPLETE``. A run without ``COMPLETE`` was killed (or is still running): its lines are the
bytes of each file between its start size and its end size -- or, after a SIGKILL left no end
file, the size the next run found at its start, or the end of the file if no run started since.
Such lines are not history: they are skipped here, whatever stage the run died in.

Two runs that overlap in time interleave their lines; if one of them is killed, the other's lines
in the same byte range are skipped too (in doubt, a line is not counted as a night).
"""
import os

START, END, COMPLETE, INCOMPLETE = 'perflogs.start', 'perflogs.end', 'COMPLETE', 'INCOMPLETE'


def read_sizes(path):
    """``perflogs.start``/``.end`` -> {(dev, inode): size}; unreadable lines are ignored."""
    sizes = {}
    try:
        with open(path, encoding='utf-8', errors='replace') as fp:
            for line in fp:
                parts = line.rstrip('\n').split('\t')
                if len(parts) < 2:
                    continue
                dev, _, ino = parts[0].partition(':')
                try:
                    sizes[(int(dev), int(ino))] = int(parts[1])
                except ValueError:
                    continue
    except OSError:
        return None
    return sizes


def runs_dir_for(perflog_root):
    """``<results>/runs`` beside a ``<results>/perflogs`` root (None if there is none)."""
    root = os.path.abspath(os.fspath(perflog_root))
    if not os.path.isdir(root):
        return None
    runs = os.path.join(os.path.dirname(root), 'runs')
    return runs if os.path.isdir(runs) else None


def excluded_ranges(perflog_root, this_run=None):
    """{(dev, inode): [(start, end), ...]} of bytes written by runs not marked COMPLETE.

    ``this_run`` (a run directory) is the nightly asking: its own lines count although it has not
    finished yet. ``end`` is None for "to the end of the file"."""
    runs_dir = runs_dir_for(perflog_root)
    if runs_dir is None:
        return {}
    this_run = os.path.realpath(this_run) if this_run else None
    ledger = []
    for name in sorted(os.listdir(runs_dir)):
        run = os.path.join(runs_dir, name)
        start_file = os.path.join(run, START)
        try:
            started = os.stat(start_file).st_mtime_ns
        except OSError:
            continue                # not a run of this ledger (older layout): nothing to say
        ledger.append((started, name, run))
    ledger.sort()
    ranges = {}
    for i, (_, _, run) in enumerate(ledger):
        if os.path.exists(os.path.join(run, COMPLETE)) or os.path.realpath(run) == this_run:
            continue
        start = read_sizes(os.path.join(run, START)) or {}
        end = read_sizes(os.path.join(run, END)) if os.path.exists(os.path.join(run, END)) else None
        later = read_sizes(os.path.join(ledger[i + 1][2], START)) if i + 1 < len(ledger) else None
        files = set(start) | set(end or {}) | set(later or {})
        for ident in files:
            lo = start.get(ident, 0)
            if end is not None:
                hi = end.get(ident)
                if hi is None:
                    continue            # created after this run ended: not its lines
            elif later is not None:
                hi = later.get(ident, 0)
            else:
                hi = None
            if hi is None or hi > lo:
                ranges.setdefault(ident, []).append((lo, hi))
        # Files created after the run started and not seen by any later snapshot: all theirs.
        if end is None and later is None:
            ranges.setdefault('new-since', []).append((start, None))
    return ranges


def is_excluded(ranges, ident, offset):
    """True if the line starting at byte ``offset`` of file ``ident`` lies in an excluded range."""
    for lo, hi in ranges.get(ident, ()):
        if offset >= lo and (hi is None or offset < hi):
            return True
    for known, _ in ranges.get('new-since', ()):
        if ident not in known:
            return True
    return False
