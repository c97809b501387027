"""Gate a change of the I/O stack: stacks A and B side by side in one session, judged on pairs
(cli.py: the command; runs.py: the slots; pairs.py: the statistics; bisect.py: the culprit)."""
