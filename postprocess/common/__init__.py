"""What every postprocess package shares: atomic output files, one-line errors, robust statistics."""
