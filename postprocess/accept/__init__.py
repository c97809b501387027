"""Accepted changes: the new normal, recorded append-only in the results tree."""
