"""The REST API and its server-sent events: conversations, turns and approvals, over the
turn pipeline and the conversations' selectors."""
