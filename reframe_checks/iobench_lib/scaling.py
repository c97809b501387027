"""Rank scaling: the rank counts a partition sweeps, from its extras 'rank_counts'.

    'rank_counts': [1, 2]                 # iobench_lib/installed.py: `local`, `local-slurm`
    'rank_counts': [128, 256, 512, 1024]  # archer2: 1, 2, 4, 8 nodes of 128 cores

Parameter values are fixed when a check class is defined, so `rank_menu()` reads the lists of the
*selected system's* partitions at import time (as lustre.stripe_menu does) and scaling checks
declare `ranks = parameter(rank_menu())`; a test whose rank count is not in its own partition's
list is skipped with that reason (`rank_skip_reason`). `-P ranks=...` still overrides. A partition
without 'rank_counts' sweeps DEFAULT.
"""
from reframe.core.exceptions import ReframeFatalError

DEFAULT = (2,)


def counts_of(extras):
    """The partition's rank counts (sorted, positive ints); DEFAULT when it names none."""
    raw = extras.get('rank_counts') or DEFAULT
    try:
        counts = sorted({int(n) for n in raw})
    except (TypeError, ValueError):
        raise ValueError(f"bad extras 'rank_counts' {raw!r} (a list of positive integers)") from None
    if not counts or counts[0] < 1:
        raise ValueError(f"bad extras 'rank_counts' {raw!r} (a list of positive integers)")
    return counts


def rank_menu():
    """Rank counts of every partition of the selected system (for parameter()); DEFAULT without
    a ReFrame runtime (plain import, pytest)."""
    try:
        import reframe.core.runtime as rt
        partitions = rt.runtime().system.partitions
    except (Exception, ReframeFatalError):
        return list(DEFAULT)
    menu = set()
    for part in partitions:
        try:
            menu.update(counts_of(part.extras))
        except ValueError:
            continue    # reported per test by rank_skip_reason
    return sorted(menu) or list(DEFAULT)


def rank_skip_reason(partition, ranks):
    """None when `ranks` is one of the partition's rank counts, else why the test is skipped."""
    try:
        counts = counts_of(partition.extras)
    except ValueError as err:
        return f'{partition.fullname}: {err}'
    if ranks not in counts:
        return (f'ranks={ranks} is not in the rank_counts {counts} of partition '
                f'{partition.fullname} (extras)')
    return None


def place_on_whole_nodes(test, partition):
    """Placement from the configuration, not the site's defaults (docs/site.md): a partition that states
    its cores per node (ReFrame's `processor: {num_cpus: N}`) gets min(ranks, N) tasks per node on
    whole nodes (nobody else's I/O in the figures); one that states none (a laptop, the one-node
    Slurm) is left as it is. Every check that launches ranks calls this after setup."""
    cores = partition.processor.num_cpus
    if cores:
        test.num_tasks_per_node = min(test.num_tasks, cores)
        test.exclusive_access = True
