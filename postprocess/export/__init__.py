"""Findings and performance values to a time-series store (VictoriaMetrics), for Grafana."""
