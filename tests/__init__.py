"""ioregress's tests (`python3 -m pytest tests`); what they share is in tests/support/."""
