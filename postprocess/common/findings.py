"""Finding scopes shared by detect, the verdict and the report (no statistics imported here).

A finding is about one series (scope ``series``) or about many series at once, told by the median
fall of their members: a partition's iobench checks (``stack``: fio, the filesystem's own
reading, did not fall with them, so the I/O stack above the filesystem; ``system``: fio fell too,
the filesystem or the partition) or one library's or check family's checks (``group``, its key in
``params``, e.g. ``backend=hdf5``)."""

MANY = ('system', 'stack', 'group')
# shown, never red: a level below its usual for a few nights, and one night far off
NOT_RED = ('degraded', 'noisy')


def group_keys(params, check):
    """The groups a series belongs to: its library and its check family."""
    fields = dict(p.split('=', 1) for p in params.split(',') if '=' in p)
    keys = []
    if fields.get('backend'):
        keys.append(f"backend={fields['backend']}")
    if check:
        keys.append(f"check={check.split(' ', 1)[0]}")
    return keys


def is_many(f):
    return f.get('scope') in MANY


def group_label(f):
    """'backend=hdf5' -> 'HDF5 checks'; 'check=MDDatasets' -> 'MDDatasets checks'."""
    key, _, value = str(f.get('params', '')).partition('=')
    name = {'hdf5': 'HDF5', 'mpiio': 'MPI-IO', 'posix': 'POSIX', 'adios2': 'ADIOS2',
            'sionlib': 'SIONlib'}.get(value, value) if key == 'backend' else value
    return f'{name} checks'


def many_label(f):
    """One line's subject for a finding about many series."""
    fell = (f' ({f["moved"]} of {f["members"]} fell)' if f.get('members') and
            f.get('status') in ('regression', 'degraded', 'noisy') else '')
    if f.get('scope') == 'group':
        return f'{group_label(f)}{fell}'
    fio = f.get('fio_change')
    fio = f' ({fio:+.0%})' if isinstance(fio, (int, float)) else ''
    if f.get('scope') == 'stack':
        return f'all iobench checks{fell}, fio steady{fio}: the I/O stack above the filesystem'
    return f'all iobench checks{fell} and fio{fio}: the filesystem or the partition'
