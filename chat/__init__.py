"""Conversations with an agent that shows its work: the pipeline of a turn, the agent it
runs, and the pages, socket and API that reach it (see each package's docstring)."""
