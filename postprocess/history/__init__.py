"""Perflog history: parse ReFrame perflogs and results databases into per-series, per-night arrays."""
