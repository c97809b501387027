"""A message through Apprise when a night turns red, and once when it is green again."""
