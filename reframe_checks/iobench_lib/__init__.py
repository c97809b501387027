"""Shared ReFrame machinery of the ioregress checks.

Installed with ioregress (`pip install -e .`, ci/setup.sh), so a check in reframe_checks/ imports
it as `from iobench_lib.base import IOBenchBase`, and the system configs, tests and bench as well.
base.py (IOBenchBase), build.py (IOBenchBuild fixture), results.py (pure helpers), darshan.py and
lustre.py (mixins with the hook points IOBenchBase calls), installed.py (what the system configs
find installed on this machine).
"""
