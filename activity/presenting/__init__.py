"""Presenting a feed: its lines and summary, the live feed's pure core, and its Markdown."""
