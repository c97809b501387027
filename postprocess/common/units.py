"""The unit of a series' values. Bandwidth series are judged in MiB/s (2^20 bytes/s); a phase that
moves no bytes (empty files, mdtest -w 0: iobench mdfiles filesize=0) logs operations where bytes
would stand (CONTRACT §3), so its "MiB/s" are operations per second / 2^20: every place that shows
a number scales it back and names the unit."""

MIB = 2.0 ** 20


def value_unit(params):
    """(scale, unit) for the values of a series with these perflog params ('a=1,b=2')."""
    if 'filesize=0' in str(params or '').split(','):
        return MIB, 'ops/s'
    return 1.0, 'MiB/s'
