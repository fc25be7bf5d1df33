from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.db.backends.utils import CursorWrapper

from activity.models import ActivityEvent, ActivityFeed
from chat.models import Conversation, Message
from tests.support import QUESTION
from tests.support.sockets import (
    ask,
    connect,
    final_render,
    finish_turns,
    frames_until_done,
    is_final,
    json_until_done,
    line_icons,
    live_render,
    open_socket,
    turn_frames,
)
from tests.support.turns import run_turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_status_lines_arrive_before_the_answer_and_the_feed_folds(
    alice, alice_conversation, knowledge_base
):
    frames = await turn_frames(alice_conversation, alice, QUESTION)

    assert QUESTION in frames[0] and "beforeend:#messages" in frames[0]
    kinds = line_icons(frames)
    first_text = kinds.index("text")
    assert kinds[:first_text] == ["🔍", "🔍", "📄", "✍️"]
    assert [kind for kind in kinds if kind != "text"][-1] == "✅"
    # Markdown while it streams: what was built live is the final answer, block for block.
    assert live_render(frames) == final_render(frames)
    assert "<strong>Salary negotiation: preparing your number</strong>" in live_render(frames)
    final = frames[-1]
    assert 'hx-swap-oob="true"' in final
    assert "Searched the knowledge base" in final
    assert "<details" in final and " open" not in final.split(">")[1]
    assert "<strong>Salary negotiation: preparing your number</strong>" in final


async def test_the_database_holds_the_feed_in_order(alice, alice_conversation, knowledge_base):
    await turn_frames(alice_conversation, alice, QUESTION)

    answer = await Message.objects.select_related("feed").aget(role="assistant")
    assert answer.state == Message.State.COMPLETE
    assert "Salary negotiation" in answer.content
    events = [e async for e in ActivityEvent.objects.filter(feed=answer.feed).order_by("seq")]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(e.kind, e.icon) for e in events] == [
        ("status", "🔍"),
        ("status", "🔍"),
        ("tool_call", ""),
        ("tool_result", ""),
        ("status", "📄"),
        ("status", "✍️"),
        ("status", "✅"),
    ]
    assert (events[2].arguments or {}).get("query") == "negotiate salary"
    assert events[3].ok is True and events[3].result_summary == "3 documents"
    feed = answer.answer_feed
    assert (feed.state, feed.summary_icon, feed.summary_text) == (
        "complete",
        "📄",
        "Searched the knowledge base",
    )
    assert (feed.event_count, feed.tool_call_count, feed.failed_tool_count) == (7, 1, 0)
    assert feed.finished_at is not None


async def test_a_direct_answer_shows_no_status_line(alice, alice_conversation, knowledge_base):
    events = await turn_frames(
        alice_conversation, alice, "Tell me a joke about penguins", as_json=True
    )

    assert events[0]["type"] == "turn"
    assert {e["type"] for e in events[1:-1]} == {"text"}
    assert events[-1]["state"] == "complete"
    assert events[-1]["summary"] == {"icon": "", "text": ""}


async def test_json_clients_get_the_event_protocol(alice, alice_conversation, knowledge_base):
    events = await turn_frames(alice_conversation, alice, QUESTION, as_json=True)

    recorded = [e for e in events if "seq" in e]
    assert [e["seq"] for e in recorded] == list(range(1, len(recorded) + 1))
    assert recorded[0] == {
        "type": "status",
        "seq": 1,
        "icon": "🔍",
        "message": "Searching the knowledge base…",
        "state": "in_progress",
        "tool": "search_documents",
        "call_id": "call_demo_2_1",
        # Added for programs that lay lines out (RENDER rich, their default).
        "fields": {
            "icon": "🔍",
            "action": "Searching the knowledge base…",
            "subject": "",
            "detail": "",
            "outcome": "in_progress",
            "duration_ms": None,
            "progress": None,
        },
    }
    answer = "".join(e["content"] for e in events if e["type"] == "text")
    stored = await Message.objects.aget(role="assistant")
    assert answer == stored.content


async def test_a_second_socket_on_the_conversation_sees_the_same_fragments(
    alice, alice_conversation, knowledge_base
):
    first = await open_socket(alice_conversation, alice)
    second = await open_socket(alice_conversation, alice)
    await ask(first, QUESTION)
    seen_by_first = await frames_until_done(first)
    seen_by_second = await frames_until_done(second)
    await finish_turns()
    await first.disconnect()
    await second.disconnect()
    assert seen_by_second == seen_by_first


async def test_joining_mid_turn_shows_the_feed_so_far_then_the_rest(
    gate, alice, alice_conversation, knowledge_base
):
    held = gate(after=5, request=2)
    first = await open_socket(alice_conversation, alice)
    await ask(first, QUESTION)
    while "✍️" not in await first.receive_from(timeout=5):
        pass
    await held.reached.wait()
    late = await open_socket(alice_conversation, alice)
    frames = [await late.receive_from(timeout=5)]  # the snapshot, read while the turn is held
    held.open()
    frames += await frames_until_done(late)
    await frames_until_done(first)
    await finish_turns()
    await first.disconnect()
    await late.disconnect()

    snapshot = frames[0]
    assert 'hx-swap-oob="true"' in snapshot and "state-streaming" in snapshot
    assert "📄" in snapshot and "✍️" in snapshot
    later_lines = [f for f in frames[1:-1] if 'class="line' in f]
    assert all("✍️" not in f and "📄" not in f for f in later_lines)
    assert is_final(frames[-1])


async def test_a_second_question_while_the_agent_works_is_refused_clearly(
    gate, alice, alice_conversation, knowledge_base
):
    held = gate(after=2)
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, QUESTION)
    await held.reached.wait()
    await ask(socket, "And another thing?")
    refusal = None
    while refusal is None:
        frame = await socket.receive_from(timeout=5)
        if 'id="notice"' in frame and 'role="alert"' in frame:
            refusal = frame
    assert "still working on the previous question" in refusal
    held.open()
    await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    assert await Message.objects.filter(content="And another thing?").acount() == 0


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ("not json", "was not JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"message": "   "}', "Type a question first."),
        ('{"message": 42}', "The question must be text."),
        ('{"message": "hi", "evil": 1}', "Unknown field: evil."),
        (json.dumps({"message": "x" * 8001}), "the limit is 8,000"),
        ('{"message": "Pay\\u0000 rise"}', "NUL character"),
        ('{"stop": 99999999999999999999999}', "Stop needs the id"),
        ('{"stop": true}', "Stop needs the id"),
        ('{"resume": [-4]}', "Resume needs a list"),
        ('{"message": "Pay \\ud800 rise"}', "lone surrogate"),
        ('{"message": "\\u200b\\u2060 \\ufeff"}', "Type a question first."),
    ],
)
async def test_bad_input_gets_a_clear_error_and_saves_nothing(
    alice, alice_conversation, payload, problem
):
    socket = await open_socket(alice_conversation, alice)
    await socket.send_to(text_data=payload)
    frame = await socket.receive_from(timeout=5)
    assert 'id="notice"' in frame and problem in frame
    assert await socket.receive_nothing(timeout=0.1)
    await socket.disconnect()
    assert await Message.objects.acount() == 0


async def test_another_users_conversation_is_refused_with_a_4xxx_code(bob, alice_conversation):
    socket = await connect(alice_conversation.pk, bob)
    connected, _ = await socket.connect()
    assert connected  # accepted, then closed: htmx does not retry a 4xxx close
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}


async def test_an_anonymous_socket_is_refused(alice_conversation):
    socket = await connect(alice_conversation.pk, None)
    await socket.connect()
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


async def test_a_socket_without_an_allowed_origin_is_refused(alice, alice_conversation):
    from channels.testing import WebsocketCommunicator

    from project.asgi import application

    socket = WebsocketCommunicator(
        application, f"/ws/c/{alice_conversation.pk}/", headers=[(b"host", b"127.0.0.1")]
    )
    connected, _ = await socket.connect()
    assert not connected


async def test_what_the_model_writes_is_escaped_live_and_in_the_final_answer(
    alice, alice_conversation, knowledge_base
):
    socket = await open_socket(alice_conversation, alice)
    # The demo model quotes the question back, so markup in it is markup from the model.
    await ask(socket, "<script>alert(1)</script><img src=x onerror=alert(2)>")
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    joined = "".join(frames)
    assert "<script>" not in joined and "<img" not in joined
    assert "&lt;script&gt;" in frames[0]
    assert any("&lt;img" in f or "&lt;script" in f for f in frames[1:-1])


async def test_answer_text_is_written_in_batches_not_per_token(
    settings, alice, alice_conversation, knowledge_base, monkeypatch
):
    settings.GLASSBOX_TEXT_FLUSH_CHARS = 200
    # Every token its own frame, however busy the machine: the writes still come in batches.
    settings.GLASSBOX_TEXT_FRAME_SECONDS = 0
    # No beat and no timed commit during the turn: only its batches, its call and its end write.
    settings.GLASSBOX_HEARTBEAT_SECONDS = 60
    settings.GLASSBOX_COMMIT_SECONDS = 60
    writes: list[str] = []
    original, original_many = CursorWrapper.execute, CursorWrapper.executemany

    def counting(self, sql, params=None):
        if sql.lstrip().upper().startswith(("UPDATE", "INSERT")):
            writes.append(sql)
        return original(self, sql, params)

    def counting_many(self, sql, param_list):
        writes.append(sql)
        return original_many(self, sql, param_list)

    monkeypatch.setattr(CursorWrapper, "execute", counting)
    monkeypatch.setattr(CursorWrapper, "executemany", counting_many)
    events = await turn_frames(alice_conversation, alice, QUESTION, as_json=True)

    answer = await Message.objects.aget(role="assistant")
    deltas = [e for e in events if e["type"] == "text"]
    message_updates = [w for w in writes if w.startswith('UPDATE "chat_message"')]
    assert len(answer.content) > 600 and len(deltas) > 3
    # Every 200 characters, plus the final write with the state.
    assert len(message_updates) == len(answer.content) // 200 + 1
    event_inserts = [w for w in writes if w.startswith('INSERT INTO "activity_activityevent"')]
    # The events up to the tool call with it, before it ran; the rest with the text's
    # batches and the end of the turn, one statement each.
    assert 2 <= len(event_inserts) <= 1 + len(message_updates)
    assert await ActivityEvent.objects.filter(feed_id=answer.feed_id).acount() == 7
    feed_updates = [w for w in writes if w.startswith('UPDATE "activity_activityfeed"')]
    assert len(feed_updates) == 1
    assert await ActivityFeed.objects.acount() == 1


async def test_a_question_reaches_the_model_after_one_trip_to_the_database_thread(
    settings, alice, alice_conversation, knowledge_base, monkeypatch
):
    """Every socket and turn of a process shares one database thread: under a burst of
    questions each trip waits behind all the others, so a turn makes as few as it can."""
    from chat.servers import configured as mcp_servers

    settings.GLASSBOX_HEARTBEAT_SECONDS = 60  # no beat during the turn
    settings.GLASSBOX_COMMIT_SECONDS = 60  # and no timed commit: only those it waits for
    # The MCP servers' rows are read once every few seconds per process, not per turn.
    monkeypatch.setattr(mcp_servers, "FRESH_SECONDS", 3600)
    monkeypatch.setattr(mcp_servers, "_rows", None)  # read now, whatever an earlier test did
    await mcp_servers.configured_servers()
    trips: list[str] = []
    original = SyncToAsync.thread_handler

    def counted(self, *args, **kwargs):
        # A query read row by row names its model: what else ran is then plain to see.
        model = getattr(getattr(self.func, "__self__", None), "model", None)
        trips.append(self.func.__qualname__ + (f" of {model.__name__}" if model else ""))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "thread_handler", counted)
    await turn_frames(alice_conversation, alice, QUESTION, as_json=True)

    # From the question to the end (the socket's closing follows).
    turn = trips[trips.index("read_opening") + 1 :]
    turn = turn[: [i for i, trip in enumerate(turn) if trip == "_write_all"][1] + 1]
    assert turn == [
        # The rows of the turn, the checks and what the model is told: one trip.
        "_admitted",
        "search_documents",  # the demo model's own look at the knowledge base
        "_write_all",  # the tool call and the lines before it, on disk before it runs
        "search_documents",  # the tool
        "_write_all",  # the other events, model calls, text and end, before `done`
    ]


async def test_reopening_the_page_shows_exactly_what_was_streamed(
    alice, alice_conversation, knowledge_base
):
    from django.test import AsyncClient

    frames = await turn_frames(alice_conversation, alice, QUESTION)

    client = AsyncClient()
    await client.aforce_login(alice)
    page = (await client.get(alice_conversation.get_absolute_url())).content.decode()
    # The final frame clears the notice, announces the answer, then swaps it in as the page
    # shows it.
    notice, announcer, answer = frames[-1].split("</div>", 2)
    assert 'id="notice"' in notice and 'role="alert"' not in notice
    assert 'id="announcer"' in announcer
    streamed = answer.replace(' hx-swap-oob="true"', "").strip()
    # The page's forms carry its request's CSRF token (they work without JavaScript too); a
    # socket frame has no request, and its forms go over the socket.
    page = re.sub(r'<input type="hidden" name="csrfmiddlewaretoken" value="[^"]*">', "", page)
    assert streamed in page


async def test_a_page_that_reconnects_learns_how_the_turns_it_shows_ended(
    alice, bob, alice_conversation, knowledge_base
):
    """Its socket was down when the turn ended: the page still shows it running."""
    answer = await sync_to_async(run_turn)(alice_conversation, QUESTION)
    bobs = await sync_to_async(run_turn)(
        await Conversation.objects.acreate(owner=bob), "Tell me a joke"
    )
    socket = await open_socket(alice_conversation, alice)
    await socket.send_to(text_data=json.dumps({"resume": [answer.pk, bobs.pk]}))
    final = await socket.receive_from(timeout=5)
    assert f'id="m-{answer.pk}"' in final and 'hx-swap-oob="true"' in final
    assert "state-complete" in final and "Searched the knowledge base" in final
    assert await socket.receive_nothing()  # another user's answer stays theirs
    await socket.disconnect()

    program = await open_socket(alice_conversation, alice, as_json=True)
    await program.send_to(text_data=json.dumps({"resume": [answer.pk]}))
    events = await json_until_done(program)
    await program.disconnect()
    assert events[0] == {
        "type": "turn",
        "question_id": str(answer.pk - 1),
        "message_id": str(answer.pk),
    }
    assert events[-1]["state"] == "complete"


@pytest.mark.parametrize("resume", ['"3"', '[1, "x"]', "[" + ", ".join(["1"] * 21) + "]"])
async def test_a_bad_resume_is_explained(alice, alice_conversation, resume):
    socket = await open_socket(alice_conversation, alice)
    await socket.send_to(text_data='{"resume": ' + resume + "}")
    assert "Resume needs a list of answer ids." in await socket.receive_from(timeout=5)
    await socket.disconnect()
