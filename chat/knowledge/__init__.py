"""The knowledge base the agent searches: its documents and the search."""
