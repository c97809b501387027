"""IOR beside iobench: IOR itself and `iobench --pattern ior` with identical parameters (block
-b = size MiB, transfer -t, segments -s) in the same job, alternating (>= 3 pairs), per API and
rank count; each tool lands in the perflog as its own series (iob_params ...,tool=iobench|tool=ior),
and both lines carry the pairs' median ratio iobench/IOR (write_ratio_iobench_ior, read_...).
postprocess/report/ior_ratio.py turns the two series into the report's ratio table.

Parameters only; the pairs job and the perflog fields are in iobench_lib/ior_pairs.py (where IOR
is looked for, and how both tools' caches are defeated alike). Without an IOR binary every test is
skipped with the reason. Tags: ior, nightly. Sizes: -S IORPairs.size=256 -S IORPairs.pairs=5.
"""
import reframe as rfm
from reframe.core.builtins import fixture, parameter

from iobench_lib.ior_pairs import TOOLS, IORCompareBase, IORPairs


@rfm.simple_test
class IORCompare(IORCompareBase):
    pair_runs = fixture(IORPairs, scope='environment', action='fork')
    tool = parameter(list(TOOLS), type=str)
