"""Recording a turn: its typed events and their declared fields, the recorder and the group
commit that write them, the hash chain that seals them, and the verbs that write a feed."""
