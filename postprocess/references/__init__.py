"""Calibration: performance references (configs/references/<system>.yaml) from measured history."""
