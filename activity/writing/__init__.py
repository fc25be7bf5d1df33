"""The writers of the audit record: a running turn's recorder and its group commits, and the one
verb everything else appends, ends and erases feeds through. What they write is
activity.recording's vocabulary (events, their seals and chains), which the models read too."""
