"""Plots and the HTML report of a results tree."""
