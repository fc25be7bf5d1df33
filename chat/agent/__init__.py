"""The agent runtime: it yields activity events and knows nothing of sockets or pages."""
