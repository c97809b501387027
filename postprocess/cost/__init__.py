"""What a night of the suite costs a site (``python -m postprocess cost``): jobs, node-hours,
wall time, scratch, the confirmation re-run and results growth per partition, read from
ReFrame's own listing of the suite (reframe_jobs.py) and added up per partition (estimate.py)."""
