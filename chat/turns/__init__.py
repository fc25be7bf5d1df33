"""The turn pipeline, one surface for the socket and the API (this module only names it):

- `begin()` admits a question (input, limits, `client_id` joins, rows: `admission`), tells
  the conversation's followers (`broadcast`) and launches the runner (`starting`, `runner`,
  `registry`); `regenerate()` does so for a new answer in place of the last;
- `follow_turn()` gives one follower a turn's events in order, filling gaps from the
  database and recovering a turn whose process died (`follow`, `recovery`);
- `stop()` ends a running turn, wherever it runs (`stopping`);
- `decide()` takes the owner's decision on a call that asks first and goes on with the turn
  from it (`resuming`; what waits, its claim, receipt and card are chat.asks's).

The model sees the conversation through `history`; what a turn runs with (client, tools) is
`deps`'s, its policy `policy`'s; `expect_questions()` has the client loaded before the first
question needs it."""

from __future__ import annotations

from chat.asks.receipts import EditRefused
from chat.conversations.refusals import TurnRejected
from chat.turns.admission import (
    QuestionInvalid,
    Restarting,
    TurnLimited,
    question_clean,
)
from chat.turns.deps import expect_questions
from chat.turns.follow import Inbox, Position, follow_turn, replay, snapshot
from chat.turns.resuming import decide
from chat.turns.started import StartedTurn
from chat.turns.starting import begin, regenerate
from chat.turns.stopping import stop
from project.groups import subscribe

__all__ = [
    "EditRefused",
    "Inbox",
    "Position",
    "QuestionInvalid",
    "Restarting",
    "StartedTurn",
    "TurnLimited",
    "TurnRejected",
    "begin",
    "decide",
    "expect_questions",
    "follow_turn",
    "question_clean",
    "regenerate",
    "replay",
    "snapshot",
    "stop",
    "subscribe",
]
