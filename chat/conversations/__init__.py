"""Conversations and their messages as stored: reading them (selectors), changing them
(services), the refusals of what is asked of them, answers rendered as Markdown, the export
a person keeps, a user's erasure and the outbox of emails sent."""
