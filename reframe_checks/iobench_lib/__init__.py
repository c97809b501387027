"""Shared ReFrame machinery of the ioregress checks.

ReFrame puts the directory of a check file on sys.path while it loads it, so a check in
reframe_checks/ imports this package as `from iobench_lib.base import IOBenchBase`.
base.py (IOBenchBase), build.py (IOBenchBuild fixture), results.py and references.py (pure
helpers), darshan.py and lustre.py (mixins with the hook points IOBenchBase calls).
"""
