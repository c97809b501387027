"""Outlying repetitions of a series on a night: listed in its finding, never dropped.

Beyond Q3 + k*IQR or below Q1 - k*IQR, k = 12 for writes and 20 for reads (seed 000: a VM's
ordinary spread of repetitions stays inside; a neighbour's burst does not). The level the verdict
judges is a Hodges-Lehmann estimate, which one burst cannot move (postprocess/detect/suite.py), so
outliers are information for the reader, not a correction.
"""
import numpy as np

OUTLIER_K = {'write': 12.0, 'read': 20.0}


def outlier_indices(values, k, quartiles=None):
    """Indices of values beyond Q3 + k*IQR or below Q1 - k*IQR (empty for < 4 values);
    ``quartiles``: (Q1, Q3) when the caller has them already."""
    values = np.asarray(values, dtype=float)
    if values.size < 4:
        return []
    q1, q3 = np.percentile(values, [25, 75]) if quartiles is None else quartiles
    iqr = q3 - q1
    return [int(i) for i in np.flatnonzero((values > q3 + k * iqr) | (values < q1 - k * iqr))]
