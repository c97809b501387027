"""The bounded nightly matrix: BenchIO's (size, ranks) shapes per suite and the stripes scaling
sweeps, from partition extras; they keep within the nightly budget each partition states.

    'benchio_shapes': {'quick': {'sizes': [64], 'ranks': [1, 2]},      # configs/systems/*.py
                       'nightly': {'sizes': [96], 'ranks': [8]}}
    'scaling_stripes': ['default', 'c-1-S1M']                          # +lustre partitions
    'nightly_budget': {'cases': 260}                                   # tests/test_budget.py

Why shapes and not a cross product: a rank count only exercises the 3-D benchio decomposition
(MPI_Dims_create(n, 3), ROMIO's two-phase aggregation, lock contention) when it splits in three
dimensions: 8 ranks (2x2x2) on `local`, a full node (128 = 8x4x4) on the sites. The quick suite
keeps 1 and 2 ranks, so "bandwidth vs ranks" is drawn on every machine. A (size, ranks) pair a
shape lists is in that shape's suite (suite_of; quick first, so a size may be quick at 2 ranks and
nightly at 128); a pair no shape lists (-P) is `quick` up to the check's quick_max_size (base.py).

Parameter values are fixed when a check class is defined, so the menus read the *selected
system's* partitions at import time (as lustre.stripe_menu does). A (size, ranks) pair no
partition of the system lists is dropped when the test is instantiated (skip at init: ReFrame
leaves it out of `-l`); a pair another partition lists but this one does not skips at setup with
the reason. `-P size=... -P ranks=...` outside every shape runs as asked (an explicit request).
"""
from reframe.core.exceptions import ReframeFatalError

SUITES = ('quick', 'nightly')
DEFAULT_SHAPES = {'quick': {'sizes': [64], 'ranks': [2]},
                  'nightly': {'sizes': [256], 'ranks': [8]}}


def _partitions():
    try:
        import reframe.core.runtime as rt
        return list(rt.runtime().system.partitions)
    except (Exception, ReframeFatalError):   # no ReFrame runtime (plain import, pytest)
        return []


def shapes_of(extras):
    """{suite: (sizes, ranks)} of a partition's extras 'benchio_shapes' (DEFAULT_SHAPES filled in)."""
    raw = extras.get('benchio_shapes') or {}
    if not isinstance(raw, dict) or set(raw) - set(SUITES):
        raise ValueError(f"bad extras 'benchio_shapes' {raw!r} (keys quick, nightly)")
    out = {}
    for suite in SUITES:
        entry = raw.get(suite) or DEFAULT_SHAPES[suite]
        try:
            sizes = sorted({int(v) for v in entry['sizes']})
            ranks = sorted({int(v) for v in entry['ranks']})
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"bad extras 'benchio_shapes' {suite}: {entry!r} "
                             "(sizes and ranks: lists of positive integers)") from None
        if not sizes or not ranks or min(sizes + ranks) < 1:
            raise ValueError(f"bad extras 'benchio_shapes' {suite}: {entry!r} "
                             "(sizes and ranks: lists of positive integers)")
        out[suite] = (sizes, ranks)
    return out


def _all_shapes():
    found = []
    for part in _partitions():
        try:
            found.append(shapes_of(part.extras))
        except ValueError:
            continue         # reported per test by shape_skip_reason
    return found or [shapes_of({})]


def size_menu():
    """Every BenchIO size of the selected system's partitions (for parameter())."""
    return sorted({s for shapes in _all_shapes() for sizes, _ in shapes.values() for s in sizes})


def rank_menu():
    """Every BenchIO rank count of the selected system's partitions (for parameter())."""
    return sorted({r for shapes in _all_shapes() for _, ranks in shapes.values() for r in ranks})


def largest_quick_ranks():
    """The largest quick rank count of the selected system (the other quick counts are the series)."""
    return max(r for shapes in _all_shapes() for r in shapes['quick'][1])


def _listed(shapes, suite, size, ranks):
    sizes, counts = shapes[suite]
    return size in sizes and ranks in counts


def suite_of(size, ranks):
    """The suite whose shapes list (size, ranks) on some partition of the selected system, quick
    first; None for a pair no shape lists (a -P request: the check's size rule decides)."""
    for suite in SUITES:
        if any(_listed(shapes, suite, size, ranks) for shapes in _all_shapes()):
            return suite
    return None


def _from_menus(size, ranks):
    """True when both values come from the menus (a cross-product pair, not a -P request)."""
    return size in size_menu() and ranks in rank_menu()


def dropped(suite, size, ranks):
    """True for a cross-product pair that no partition of the selected system lists for `suite`."""
    return _from_menus(size, ranks) and not any(
        _listed(shapes, suite, size, ranks) for shapes in _all_shapes())


def shape_skip_reason(partition, suite, size, ranks):
    """None when this partition lists (size, ranks) for `suite`, or the pair was asked for with
    -P; else why the test is skipped on this partition."""
    try:
        shapes = shapes_of(partition.extras)
    except ValueError as err:
        return f'{partition.fullname}: {err}'
    if _listed(shapes, suite, size, ranks) or not _from_menus(size, ranks):
        return None
    sizes, counts = shapes[suite]
    return (f'size={size} ranks={ranks} is not a {suite} shape of {partition.fullname} '
            f'(extras benchio_shapes: sizes {sizes}, ranks {counts})')


def scaling_stripes_of(extras):
    """Stripe names the scaling checks sweep on a partition (extras 'scaling_stripes')."""
    return list(extras.get('scaling_stripes') or ['default'])


def scaling_stripe_menu():
    """Union over the selected system's partitions (for parameter()), 'default' first."""
    names = ['default']
    for part in _partitions():
        names += [n for n in scaling_stripes_of(part.extras) if n not in names]
    return names
