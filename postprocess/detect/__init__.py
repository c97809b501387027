"""Regression detection: each night's repetitions judged against the history of the same series."""
