"""Standard wires for a turn's events: AG-UI (`agui`) and the AI SDK's UI message stream
(`ui_stream`). Each is a pure mapping of the JSON events (activity.recording.events), never a
second source; `frames` numbers what they emit so a client resumes where it dropped."""
