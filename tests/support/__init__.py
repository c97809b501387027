"""What the tests share, imported as `from tests.support import x` (fixtures stay in
tests/conftest.py, where pytest finds them):

* launch: iobench (and IOR) under mpirun, bad-input settings, iobench's own error lines;
* simruns: simulated run records and histories for the verdict tests;
* report_inputs: the synthetic history's real findings and a ReFrame report of their checks;
* reframe_runs: the real ReFrame front end in a subprocess, its report's test cases;
* delay: the LD_PRELOAD library that makes open/close of one rank slow (fixture delay_shim);
* preload: compiles such a test-only LD_PRELOAD library;
* servers: real servers on loopback (webhook, SMTP, VictoriaMetrics);
* nights: real `ci/nightly.sh` nights re-dated, with iofault.c's faults (also bench/real_replay.py).
"""
