"""Compare two selections of sessions with the verdict's statistics (gate an upgrade)."""
