"""The browser's WebSocket to one conversation: it hands requests to the turn pipeline and
shows the turns live, as HTML fragments or JSON."""
