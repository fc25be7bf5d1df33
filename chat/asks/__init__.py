"""What waits for a person, one package for every kind of wait:

- `approvals` takes the owner's decision on a tool call that asks first, once, whichever
  process, tab or route it comes by; `receipts` binds an approval to what its card showed and
  checks the edits it carries; `approval_cards` is the card a page or a socket draws;
- `elicitations` holds an MCP server's questions mid-call and their answers;
  `question_cards` their cards;
- `inbox` lists what waits across all of a person's conversations, one source per kind;
- `waiting` is the protocol every kind provides to the turn pipeline, and `cards` the
  selector pages and sockets get their cards from.

The turn pipeline (chat.turns) pauses and resumes through it; it imports no socket, API or
page, and the agent runtime does not import it."""
