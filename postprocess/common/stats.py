"""Robust statistics shared by history (baseline noise) and detection."""
import math

import numpy as np


def median_log_var(values):
    """Variance of the log of a sample median (robust sigma, large-sample pi/2 factor)."""
    logs = np.log(np.asarray(values, dtype=float))
    if logs.size < 2:
        return 0.0
    sigma = 1.4826 * float(np.median(np.abs(logs - np.median(logs))))
    return (math.pi / 2.0) * sigma ** 2 / logs.size
