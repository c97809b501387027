"""Which history a command reads: its sources and the part of them used.

The library takes this, never the command line's ``args``: a command module builds it from its
options (history/cli.py ``query_of``), a bench or a test writes it out. Frozen, so a command
that reads history twice (detect's confirmation) reads the same.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class HistoryQuery:
    perflogs: tuple = ()        # perflog directories or files
    db: str = None              # ReFrame results DB
    store: str = None           # the results store, <results>/store
    system: str = None          # only runs of this system
    date_from: str = None       # YYYY-MM-DD: the runs' local completion dates, both inclusive
    date_to: str = None
    this_run: str = None        # the nightly run directory asking: its report.json counts too

    def __post_init__(self):
        # a list given (argparse's append) is kept as a tuple: the query stays hashable
        object.__setattr__(self, 'perflogs', tuple(self.perflogs or ()))
