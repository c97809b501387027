"""Finding scopes shared by detect, the verdict and the report (no statistics imported here).

A finding is about one series (scope ``series``) or about many series at once: the partition's
common factor (``stack``: the iobench checks moved and fio did not, the I/O stack above the
filesystem; ``system``: fio moved with them, the filesystem or the partition) or one library's or
check family's checks (``group``, its key in ``params``, e.g. ``backend=hdf5``). A ``stack`` or
``system`` finding with ``against`` (``params`` ``against=read``) is one phase's factor judged
against the other phase's on the same nights: writes slower against reads."""

MANY = ('system', 'stack', 'group')
# the night is not red for these: a flag the re-run did not reproduce, and a series whose history
# is still too short to judge at the suite's false-alarm rate
NOT_RED = ('unconfirmed', 'watching')


def group_keys(params, check):
    """The groups a series belongs to: its library and its check family."""
    fields = dict(p.split('=', 1) for p in params.split(',') if '=' in p)
    keys = []
    if fields.get('backend'):
        keys.append(f"backend={fields['backend']}")
    if check:
        keys.append(f"check={check.split(' ', 1)[0]}")
    return keys


FLAG_FIELDS = ('system', 'partition', 'environ', 'check', 'params', 'phase')


def flag_key(f):
    """A finding's series key as verdict.json's readers hold it (detect/cli.py PastFlags)."""
    return tuple(str(f.get(k, '')) for k in FLAG_FIELDS)


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
    if f.get('scope') == 'group':
        moved = f' ({f["moved"]} of {f["members"]})' if f.get('members') else ''
        return f'{group_label(f)}{moved}'
    fio = f.get('fio_change')
    if f.get('against'):
        return _contrast_label(f, fio)
    if f.get('scope') == 'stack':
        # fio "unchanged": not moved beyond its own night-to-night spread (detect/factors.py)
        spread = f' ({fio:+.0%}, within its spread)' if isinstance(fio, (int, float)) else ''
        return f'all iobench checks, fio unchanged{spread}: the I/O stack above the filesystem'
    return ('all checks and fio' + (f' ({fio:+.0%})' if isinstance(fio, (int, float)) else '')
            + ': the filesystem or the partition')


def _contrast_label(f, fio):
    """A phase's factor judged against the other phase's (detect/suite.py contrasts): the night's
    machine state moved both; what is left is one phase's path."""
    def pct(x):
        return f' {x:+.0%}' if isinstance(x, (int, float)) else ''
    phase, other = f.get('phase', ''), f['against']
    moved = f'{phase}s{pct(f.get("phase_change"))}, {other}s{pct(f.get("against_change"))}'
    subject = f'iobench {phase}s against their {other}s ({moved})'
    if f.get('scope') == 'stack':
        spread = f' ({fio:+.0%}, within its spread)' if isinstance(fio, (int, float)) else ''
        return f'{subject}, fio unchanged{spread}: the {phase} path of the I/O stack'
    return f'{subject}, fio{pct(fio)} too: the {phase} path of the filesystem or the partition'
