"""A server's question to the person whose call it is running (MCP elicitation, form and URL
mode): routed from the server's shared session to that call's turn, which shows it and waits
for the answer. The turn's side is handed in by the runner as an `Asker` (chat.turns.
elicitations): the agent knows no pages, sockets or models.

Both protocols arrive here: a 2025-11-25 server sends `elicitation/create` while the call
runs; a 2026-07-28 server answers the call with `InputRequiredResult`, and the SDK's
`Client.call_tool` asks through the same callback before it calls again with the answers
(in the call's own task, where chat.agent.questions finds it)."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol
from weakref import WeakKeyDictionary

import mcp_types as types
from django.utils.translation import gettext as _
from mcp.client.session import ClientRequestContext

from chat.agent.mcp.config import ServerSpec
from chat.agent.mcp.elicit_schema import UnsupportedForm, read_form
from chat.agent.questions import Caller, Question, caller

logger = logging.getLogger("glassbox.mcp")


class Connection(Protocol):
    """What routing a question needs of a connection (chat.agent.mcp.connections), which
    imports this module: its server's name."""

    @property
    def spec(self) -> ServerSpec: ...


MESSAGE_LIMIT = 2000
# Questions one call may ask: a server that asks more has its call stopped, in words (before
# the SDK's own bound on 2026-07-28 input rounds, ten, ends it with a less helpful error).
QUESTIONS_PER_CALL = 5


# The calls each connection is running now that can be asked something. A connection is
# shared by every turn of the process: a 2025-11-25 question arrives on the session's own
# task, not the call's, and names no call.
_running: WeakKeyDictionary[Connection, list[Caller]] = WeakKeyDictionary()
# Set inside a call's own task (and the tasks it starts): a session's task inherits the
# context of the turn that first connected, whose asker must not answer for others.
_inside: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "inside_call", default=None
)


@contextmanager
def calling(connection: Connection) -> Iterator[None]:
    """Around one call on `connection`: questions the server asks meanwhile can reach it."""
    this = caller()
    if this is None:
        yield
        return
    running = _running.setdefault(connection, [])
    running.append(this)
    inside = _inside.set(connection)
    try:
        yield
    finally:
        _inside.reset(inside)
        running.remove(this)


def caller_of(connection: Connection) -> Caller | None:
    """Whose question it is: the call's own task's (2026-07-28, asked from within call_tool),
    or the one call the connection runs now. With several, a question cannot be told apart:
    it is refused rather than shown to someone whose call it may not be."""
    this = caller()
    if this is not None and _inside.get() is connection:
        return this
    running = _running.get(connection, [])
    return running[0] if len(running) == 1 else None


def refusal(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


async def on_elicit(
    connection: Connection, context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """The session's elicitation callback: the question goes to the call's turn."""
    asked = caller_of(connection)
    if asked is None:
        return refusal("No call of this client can be asked now")
    if asked.count() > QUESTIONS_PER_CALL:
        asked.stop(
            _("the server asked more than %(limit)d questions in one call")
            % {"limit": QUESTIONS_PER_CALL}
        )
        return refusal("Too many questions in one call")
    question = question_of(connection.spec.name, asked.call_id, params)
    if isinstance(question, types.ErrorData):
        return question
    reply = await asked.ask(question)
    return types.ElicitResult(action=reply.action, content=reply.content)


def question_of(
    server: str, call_id: str, params: types.ElicitRequestParams
) -> Question | types.ErrorData:
    message = str(params.message)[:MESSAGE_LIMIT]
    if isinstance(params, types.ElicitRequestURLParams):
        return Question(
            server=server,
            call_id=call_id,
            mode="url",
            message=message,
            schema={},
            url=params.url,
            elicitation_id=params.elicitation_id or "",
        )
    try:
        read_form(params.requested_schema)
    except UnsupportedForm as exc:
        return refusal(f"Unsupported form: {exc}")
    return Question(
        server=server,
        call_id=call_id,
        mode="form",
        message=message,
        schema=dict(params.requested_schema),
    )


async def on_completed(connection: Connection, elicitation_id: str) -> None:
    """A URL-mode question was completed at the server (notifications/elicitation/complete)."""
    for each in list(_running.get(connection, [])):
        await each.asker.completed(connection.spec.name, elicitation_id)
