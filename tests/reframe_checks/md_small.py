"""Test-only check (not part of the suite): the suite's MDEmptyFiles as it is (8 processes, empty
files, its repetitions) with 200 files per rank instead of 5000, so tests/test_processes.py sees
the eight-process measurement in seconds, not minutes. Run with
`-c tests/reframe_checks/md_small.py`."""
import os

import reframe as rfm
import reframe.utility as util
from reframe.core.builtins import parameter

_suite = util.import_module_from_file(
    os.path.join(os.path.dirname(__file__), '..', '..', 'reframe_checks', 'metadata.py'))


@rfm.simple_test
class MDEmptyFilesSmall(_suite.MDEmptyFiles):
    size = parameter([200], type=int)
