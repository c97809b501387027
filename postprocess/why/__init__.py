"""Why a night is red: what changed between the last good night and a finding's `since` night
(provenance, machine state, site notes), for the terminal summary and the page."""
