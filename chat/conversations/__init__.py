"""Conversations and their messages as stored: reading them (selectors), changing them
(services), the text rules for what is stored, answers rendered as Markdown, the export
a person keeps, a user's erasure and the outbox of emails sent."""
