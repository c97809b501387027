"""ioregress postprocess: perflog history, regression detection, calibration, plots.

A small library with a thin CLI (``python -m postprocess <command>``). Inputs are the ReFrame
perflogs whose line format is the contract in docs/CONTRACT.md section 3; nothing here rewrites or
deletes them, and every output is written atomically (tmp file + rename).
"""
__version__ = '0.1.0'
