"""Darshan logs: facts, assertions, triage, the HTML index and per-log pages.

(Inside this package ``import darshan`` still means PyDarshan: imports are absolute.)
"""
