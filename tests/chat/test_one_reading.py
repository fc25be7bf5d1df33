"""One reading of requests (chat.turns.actions): the same bad request sent over the socket,
the no-JavaScript form and the REST API gets the same refusal in the same words, and nothing
is saved, started or decided. Unreadable input is a 400 or an error frame, never a 500 or a
closed socket."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

import pytest

from chat.models import Conversation, Message, ToolApproval
from chat.turns import actions
from tests.support.api import client_for, turns_url
from tests.support.sockets import finish_turns, json_until_done, open_socket, paused_turn
from tests.support.surfaces import api_refusal, form_refusal, said, socket_refusal

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"
# Deep enough to exhaust the JSON decoder's recursion, small enough for a socket frame
# under Daphne's 64 KiB limit.
DEEP = "[" * 30_000 + "]" * 30_000
NOT_AN_OBJECT = "That message could not be read (expected a JSON object)."
NOT_JSON = "That message could not be read (it was not JSON)."
TOO_DEEP = "That message could not be read (nested more than 8 levels deep)."
ALL_ENDPOINTS = ("conversations", "messages", "approvals")


@dataclass(frozen=True)
class Case:
    """One bad request as each surface can send it (None: it cannot) and its refusal."""

    refusal: str
    socket: str | None = None
    form: dict[str, str] | None = None
    # (endpoint, body), or (endpoint, body, the tool call's id in its path)
    api: tuple[tuple[str, ...], ...] = field(default=())


def everywhere(body: str) -> tuple[tuple[str, str], ...]:
    return tuple((endpoint, body) for endpoint in ALL_ENDPOINTS)


CASES = {
    "an unknown field": Case(
        "Unknown field: evil.",
        socket='{"message": "Hi", "evil": 1}',
        form={"message": "Hi", "evil": "1"},
        api=(
            ("conversations", '{"evil": 1}'),
            ("messages", '{"content": "Hi", "evil": 1}'),
            ("approvals", '{"decision": "approve", "evil": 1}'),
        ),
    ),
    "a null body": Case(NOT_AN_OBJECT, socket="null", api=everywhere("null")),
    "a list body": Case(NOT_AN_OBJECT, socket='[{"message": "Hi"}]', api=everywhere("[]")),
    "a string body": Case(NOT_AN_OBJECT, socket='"Hi"', api=everywhere('"Hi"')),
    "text that is not JSON": Case(NOT_JSON, socket="{", api=everywhere("{")),
    "NaN": Case(NOT_JSON, socket='{"stop": NaN}', api=everywhere('{"content": NaN}')),
    "nesting too deep": Case(
        TOO_DEEP,
        socket='{"message": ' + DEEP + "}",
        api=(
            ("conversations", '{"title": ' + DEEP + "}"),
            ("messages", '{"content": ' + DEEP + "}"),
            ("approvals", DEEP),
        ),
    ),
    "nesting one level too deep": Case(
        TOO_DEEP, socket='{"message": [[[[[[[[]]]]]]]]}', api=everywhere("[" * 9 + "]" * 9)
    ),
    "a question that is not text": Case(
        "The question must be text.",
        socket='{"message": 42}',
        api=(("messages", '{"content": 42}'),),
    ),
    "a client_id that is not a UUID": Case(
        "client_id must be a UUID.",
        socket='{"message": "Hi", "client_id": "nope"}',
        form={"message": "Hi", "client_id": "nope"},
        api=(("messages", '{"content": "Hi", "client_id": "nope"}'),),
    ),
    "a client_id that is false": Case(
        "client_id must be a UUID.",
        socket='{"message": "Hi", "client_id": false}',
        api=(("messages", '{"content": "Hi", "client_id": false}'),),
    ),
    "a reason that is not text": Case(
        "The reason must be text.",
        socket='{"deny": "call_1", "reason": 5}',
        api=(("approvals", '{"decision": "deny", "reason": 5}'),),
    ),
    "a reason too long": Case(
        "The reason is at most 500 characters long.",
        socket=json.dumps({"deny": "call_1", "reason": "x" * 501}),
        form={"deny": "call_1", "reason": "x" * 501},
        api=(("approvals", json.dumps({"decision": "deny", "reason": "x" * 501})),),
    ),
    "a tool call id too long": Case(
        "Approve and deny need the id of the tool call.",
        socket=json.dumps({"approve": "c" * 65}),
        form={"approve": "c" * 65},
        api=(("approvals", '{"decision": "approve"}', "c" * 65),),
    ),
    "a decision and a question": Case(
        "Send one request at a time: “message” and “approve” cannot go together.",
        socket='{"approve": "call_1", "message": "hello"}',
        form={"approve": "call_1", "message": "hello"},
    ),
    "a stop and a question": Case(
        "Send one request at a time: “message” and “stop” cannot go together.",
        socket='{"stop": 1, "message": "hello"}',
        form={"stop": "1", "message": "hello"},
    ),
    "a stop with a question's client_id": Case(
        "Send one request at a time: “stop” and “client_id” cannot go together.",
        socket=json.dumps({"stop": 1, "client_id": str(uuid.uuid4())}),
        form={"stop": "1", "client_id": str(uuid.uuid4())},
    ),
    "approve and deny": Case(
        "Approve or deny, not both.",
        socket='{"approve": "call_1", "deny": "call_1"}',
        form={"approve": "call_1", "deny": "call_1"},
    ),
    # Each API endpoint makes one kind of request: another's field is an unknown one.
    "a question sent with a decision to the API": Case(
        "Unknown field: content.",
        api=(("approvals", '{"decision": "approve", "content": "hello"}'),),
    ),
    "a decision sent with a question to the API": Case(
        "Unknown field: decision.",
        api=(("messages", '{"content": "hello", "decision": "approve"}'),),
    ),
    "a decision that is neither approve nor deny": Case(
        "The decision must be approve or deny.",
        api=(("approvals", '{"decision": "maybe"}'),),
    ),
}
# Text no database can store: PostgreSQL fails on a NUL (the socket closed with 1011), SQLite
# kept it and handed it on; a lone surrogate is refused as well. A browser's form cannot send
# a lone surrogate (it is no UTF-8), so the form is sent the NUL only.
NUL = "The text holds a NUL character, which cannot be stored; remove it."
SURROGATE = "The text holds a broken character (a lone surrogate); remove it."
QUESTION = str(uuid.uuid4())
for bad, refusal, word in (("\x00", NUL, "a NUL"), ("\ud800", SURROGATE, "a lone surrogate")):
    form = (lambda fields: fields) if bad == "\x00" else (lambda fields: None)
    CASES |= {
        f"{word} in an answer to a server's question": Case(
            refusal,
            socket=json.dumps({"elicitation": QUESTION, "answer": {"name": f"Ada{bad}"}}),
            form=form({"elicitation": QUESTION, "answer.name": f"Ada{bad}"}),
        ),
        f"{word} in a field's name of an answer": Case(
            refusal, socket=json.dumps({"elicitation": QUESTION, "answer": {f"n{bad}": "Ada"}})
        ),
        f"{word} in an edited argument": Case(
            refusal,
            socket=json.dumps({"approve": "call_1", "edited_arguments": {"to": [f"a{bad}"]}}),
            form=form({"approve": "call_1", "argument.to": f"a{bad}@example.com"}),
            api=(
                (
                    "approvals",
                    json.dumps({"decision": "approve", "edited_arguments": {"to": f"a{bad}"}}),
                ),
            ),
        ),
        f"{word} in a denial's reason": Case(
            refusal,
            socket=json.dumps({"deny": "call_1", "reason": f"no{bad}"}),
            form=form({"deny": "call_1", "reason": f"no{bad}"}),
            api=(("approvals", json.dumps({"decision": "deny", "reason": f"no{bad}"})),),
        ),
    }
SENDS = [
    pytest.param(name, surface, sent, id=f"{name} over {surface}")
    for name, case in CASES.items()
    for surface, sent in [
        ("the socket", case.socket),
        ("the form", case.form),
        *((f"the API ({sent[0]})", sent) for sent in case.api),
    ]
    if sent is not None
]


@pytest.mark.parametrize(("name", "surface", "sent"), SENDS)
async def test_a_bad_request_gets_the_same_refusal_on_every_surface_and_saves_nothing(
    alice, alice_conversation, name, surface, sent
):
    if surface == "the socket":
        refusal = await socket_refusal(alice_conversation, alice, sent)
    elif surface == "the form":
        refusal = await form_refusal(alice_conversation, alice, sent)
    else:
        refusal = said(await api_refusal(alice_conversation, alice, *sent))
    assert refusal == CASES[name].refusal
    assert not await Message.objects.aexists()
    assert await Conversation.objects.acount() == 1  # alice_conversation only


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"content": 42}', "content"),
        ('{"content": "Hi", "client_id": "nope"}', "client_id"),
    ],
)
async def test_the_api_names_the_field_at_fault(alice, alice_conversation, body, field):
    assert field in await api_refusal(alice_conversation, alice, "messages", body)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decision": "deny", "reason": "no\x00"}, "reason"),
        ({"decision": "approve", "edited_arguments": {"to": "\ud800"}}, "edited_arguments"),
    ],
)
async def test_the_api_names_the_field_that_holds_unstorable_text(
    alice, alice_conversation, body, field
):
    refused = await api_refusal(alice_conversation, alice, "approvals", json.dumps(body))
    assert list(refused) == [field]


async def test_an_sse_client_hears_the_refusal_as_an_error_event(alice, alice_conversation):
    client = await client_for(alice)
    response = await client.post(
        turns_url(alice_conversation),
        '{"content": ' + DEEP + "}",
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 400
    assert response.content.decode() == (
        f"event: error\ndata: {json.dumps({'type': 'error', 'message': TOO_DEEP})}\n\n"
    )


async def test_a_decision_sent_with_a_question_neither_decides_nor_asks(alice, alice_conversation):
    socket, events = await paused_turn(alice_conversation, alice, EMAIL)
    call_id = events[-1]["call_id"]
    combined = {"approve": call_id, "message": "hello"}

    await socket.send_to(text_data=json.dumps(combined))
    said_on_socket = json.loads(await socket.receive_from(timeout=5))
    said_in_form = await form_refusal(alice_conversation, alice, combined)
    said_by_api = await api_refusal(
        alice_conversation,
        alice,
        "approvals",
        json.dumps({"decision": "approve", "content": "hello"}),
        call_id=call_id,
    )

    refusal = "Send one request at a time: “message” and “approve” cannot go together."
    assert said_on_socket == {"type": "error", "message": refusal}
    assert said_in_form == refusal
    assert said_by_api == {"detail": "Unknown field: content."}
    approval = await ToolApproval.objects.aget()
    assert approval.decision == ""
    assert await Message.objects.filter(role="user").acount() == 1  # only the first question
    # The call still waits for a decision, and takes one.
    await socket.send_to(text_data=json.dumps({"deny": call_id}))
    rest = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert rest[0]["type"] == "decision" and rest[0]["decision"] == "deny"


async def test_brackets_inside_a_question_are_text_not_nesting(alice, alice_conversation):
    question = "What do [[[[{{{{ and ]]]]}}}} mean? " * 20
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": question}))
    events = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert events[-1]["state"] == "complete"
    assert await Message.objects.filter(role="user", content=question.strip()).aexists()


async def test_the_depth_limit_is_the_one_the_texts_and_the_schema_state():
    assert f"nested more than {actions.DEPTH_LIMIT} levels" in TOO_DEEP
    from project.openapi import BODY_RULES

    assert f"nested at most {actions.DEPTH_LIMIT} levels deep" in BODY_RULES
