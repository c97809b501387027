"""What the checks (reframe_checks/, configs/) and postprocess/ agree on (docs/CONTRACT.md).

Each fact is written here once and both sides import it; the checks import nothing else of
postprocess/, so either side changes freely behind these modules.

- perflog.py: the perflog line ReFrame writes (format, header fields, phases) and ``iob_params``
- reference_file.py: the layout of configs/references/<system>.yaml, checked and looked up
- darshan_facts.py: a Darshan log read into the facts the checks assert and postprocess shows
- darshan_checks.py: the assertions that a log agrees with iobench's result
- process_files.py: the file names of a check's further iobench processes (result.pN.json,
  iobench.pN.darshan), what the checks write and the Darshan index joins on
- victoriametrics.py: the import lines sites read (metric names, labels), ReFrame's handler
"""
