"""Input no database can store, and requests that reach past what a surface allows, are
refused before anything is checked, stored or sent on: a NUL or a lone surrogate in an answer
to a server's question (PostgreSQL failed on it and closed the socket with 1011; SQLite kept
it and handed it to the server), a program's edit of the model's feedback line, and a frame
from a socket refused as it opened."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.test import AsyncClient

from chat.models import Message, ToolApproval
from tests.support.questions import waiting_questions
from tests.support.sockets import (
    connect,
    everything_sent,
    open_socket,
    paused_turn,
    stop_turns_left_running,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"
NUL = "The text holds a NUL character, which cannot be stored; remove it."
SURROGATE = "The text holds a broken character (a lone surrogate); remove it."


@pytest.mark.parametrize(("bad", "refusal"), [("\x00", NUL), ("\ud800", SURROGATE)])
@pytest.mark.parametrize("as_json", [True, False], ids=["program", "page"])
async def test_an_answer_no_database_can_store_is_refused_on_the_socket_and_nothing_is_stored(
    alice, alice_conversation, bad, refusal, as_json
):
    (question,) = await waiting_questions(alice_conversation)
    socket = await open_socket(alice_conversation, alice, as_json=as_json)
    await everything_sent(socket)  # the running turn and its card
    sent: dict[str, Any] = {"elicitation": str(question.pk), "action": "accept"}
    sent |= {"answer": {"name": f"Ada{bad}"}} if as_json else {"answer.name": f"Ada{bad}"}
    await socket.send_to(text_data=json.dumps(sent))
    (frame,) = await everything_sent(socket)  # the refusal, and the socket still open
    await socket.disconnect()

    assert (json.loads(frame)["message"] if as_json else frame).count(refusal) == 1
    await question.arefresh_from_db()
    assert (question.state, question.content, question.answered_by) == ("waiting", None, None)


async def test_a_program_cannot_rewrite_the_models_feedback_line_but_may_send_it_back(
    alice, alice_conversation
):
    socket, _events = await paused_turn(alice_conversation, alice, EMAIL)
    approval = await ToolApproval.objects.aget()
    client = AsyncClient()
    await client.aforce_login(alice)
    url = f"/api/conversations/{alice_conversation.pk}/approvals/{approval.call_id}/"
    arguments = dict(approval.arguments)
    changed = arguments | {"feedback_to_user": "Nothing to see here"}

    refused = await client.post(
        url,
        {"decision": "approve", "edited_arguments": changed},
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "edited_arguments": {"feedback_to_user": ["This tool has no argument “feedback_to_user”."]}
    }
    await approval.arefresh_from_db()
    assert approval.decision == "" and approval.edited_arguments is None

    # The arguments as the card gave them, the line included, change nothing.
    taken = await client.post(
        url,
        {"decision": "approve", "edited_arguments": arguments | {"subject": "Tuesday?"}},
        content_type="application/json",
    )
    assert taken.status_code == 200
    await approval.arefresh_from_db()
    assert approval.edited_arguments is not None
    assert approval.edited_arguments["feedback_to_user"] == arguments["feedback_to_user"]
    await stop_turns_left_running()
    await socket.disconnect()


async def test_a_socket_refused_as_it_opened_ignores_a_frame_and_logs_nothing(
    alice, alice_conversation, caplog
):
    caplog.set_level(logging.DEBUG)
    socket = await connect(alice_conversation.pk)  # no login
    connected, _ = await socket.connect(timeout=10)
    assert connected
    assert (await socket.receive_output(timeout=5))["code"] == 4401
    await socket.send_to(text_data=json.dumps({"message": "Hi"}))
    assert await socket.receive_nothing(timeout=0.2)
    await socket.disconnect()

    assert "flood" not in caplog.text and "Traceback" not in caplog.text
    assert not await Message.objects.aexists()
