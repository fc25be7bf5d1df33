"""A real MCP server (tests/support/hostile_mcp_server.py, over stdio) that misbehaves in its
calls hurts no one: for each case the turn ends (never stuck, no socket closed with 1011),
the feed says what happened in words, the server's session stays up (the misbehaviour was
bounded, so there is nothing to reconnect), and another coroutine's 10 ms ticks keep
coming while it runs (tests/support/stalls.py; bench/hostile_servers.py measures another
user's requests)."""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import os
import time

import pytest

from activity.models import ActivityEvent
from chat.agent.mcp import stdio as bounded_stdio
from chat.agent.mcp.connections import pool
from chat.agent.mcp.elicitation import QUESTIONS_PER_CALL
from tests.support.frames import assert_fits
from tests.support.mcp import stdio, stdio_unforked
from tests.support.questions import answer
from tests.support.sockets import finish_turns, json_turn, json_until_done, open_socket
from tests.support.stalls import Ticker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# Only a real stall breaks it: the turn's own work holds the loop a little on a busy machine.
STALL = 1.0


@pytest.fixture
def hostile(settings, sessions):
    """The hostile server, its tools as the SDK lists them (HOSTILE_SCHEMA names no schema
    case); each test opens its own session, closed at its end."""

    def declare(forked: bool = True, **env: str):
        spec = (stdio if forked else stdio_unforked)(
            "hostile", "tests.support.hostile_mcp_server", **{"HOSTILE_SCHEMA": "calls"} | env
        )
        settings.GLASSBOX_MCP_SERVERS = [spec]
        return spec

    return declare


def statuses(events: list[dict], state: str) -> list[str]:
    return [e["message"] for e in events if e["type"] == "status" and e["state"] == state]


async def still_up() -> bool:
    (connection,) = pool().connections.values()
    return connection.client is not None and connection.sessions == 1


async def run(conversation, user, question: str, limit: float = 30) -> tuple[list[dict], float]:
    async with Ticker() as ticks:
        events = await json_turn(conversation, user, question, limit)
    assert events[-1]["type"] == "done" and events[-1]["state"] in ("complete", "failed")
    return events, ticks.longest


async def test_a_50_mb_result_is_dropped_in_words_and_the_next_call_works(
    hostile, alice, alice_conversation
):
    hostile()
    events, longest = await run(alice_conversation, alice, "hostile__big {}")

    (failed,) = statuses(events, "failed")
    assert failed == "“Big” failed (the result was dropped: it was 50 MB, over the 4 MB allowed)"
    assert events[-1]["state"] == "complete"
    assert longest < STALL
    assert await still_up()
    again, _longest = await run(alice_conversation, alice, "hostile__ping {}")
    assert statuses(again, "done")[0] == "“Ping” finished"


async def test_a_huge_structured_result_is_not_kept_and_the_line_says_so(
    hostile, alice, alice_conversation
):
    hostile()
    events, longest = await run(alice_conversation, alice, "hostile__structured {}")

    assert statuses(events, "done")[0] == (
        "“Structured” finished (its structured result was over 256 KB and was not kept)"
    )
    result = await ActivityEvent.objects.aget(kind="tool_result")
    assert result.ok and result.result_structured is None
    assert longest < STALL
    assert await still_up()


async def test_bytes_that_are_not_utf8_nuls_and_lone_surrogates_are_replaced_in_words(
    hostile, alice, alice_conversation
):
    hostile()
    events, longest = await run(alice_conversation, alice, "hostile__garbled {}")

    assert statuses(events, "done")[0] == (
        "“Garbled” finished (5 characters that were not text were replaced)"
    )
    result = await ActivityEvent.objects.aget(kind="tool_result")
    assert result.result_content == "caf\ufffd \ufffd\ufffd ok  nul \ufffd half"
    assert longest < STALL
    assert await still_up()


async def test_tool_titles_with_nuls_and_lone_surrogates_are_cleaned(
    hostile, sessions, alice, alice_conversation
):
    spec = hostile(HOSTILE_SCHEMA="dirty")
    (connection,) = await sessions.connect([spec])
    titles = {tool.name: (tool.title, tool.description) for tool in connection.tools}
    assert titles["ping"] == ("Echo \ufffd", "Says Echo \ufffd back")

    events, _longest = await run(alice_conversation, alice, "hostile__ping {}")
    assert "Running “Echo �”…" in statuses(events, "in_progress")
    stored = [e.message async for e in ActivityEvent.objects.all()]
    assert not any("\x00" in m or "\udc00" in m for m in stored)


async def test_a_server_runs_below_the_serving_processs_cpu_priority(
    hostile, alice, alice_conversation
):
    # Unforked: a forked server keeps the zygote's priority.
    hostile(forked=False)
    await run(alice_conversation, alice, "hostile__priority {}")
    result = await ActivityEvent.objects.aget(kind="tool_result")
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert own < 19 and result.result_content == f"{min(19, own + bounded_stdio.LOWER_PRIORITY)}"


async def test_progress_and_log_floods_are_counted_not_shown_or_stored_and_slow_only_their_call(
    hostile, alice, alice_conversation, monkeypatch
):
    # Faster than a product's pace, for a short test: the pace, not the flood, sets the time.
    monkeypatch.setattr(bounded_stdio, "NOTICES_PER_SECOND", 20_000)
    hostile()
    await run(alice_conversation, alice, "hostile__ping {}")
    quiet = await ActivityEvent.objects.acount()
    began = time.monotonic()
    events, longest = await run(alice_conversation, alice, "hostile__chatter {}", limit=60)
    # The server wrote its 20,000 notices as fast as it could; they were read at the pace,
    # all but the first burst and the last read's (a pipe holds no more than 64 KiB of them).
    assert time.monotonic() - began >= (20_000 - bounded_stdio.NOTICES_AT_ONCE - 1000) / 20_000

    done = statuses(events, "done")[0]
    assert done.startswith("“Chatter” finished — the server sent 10,000 progress messages; ")
    assert done.endswith(" — the server sent 10,000 log messages; 9,990 were not kept")
    shown = [e for e in events if e["type"] == "status" and "progress" in e]
    assert f"; {10_000 - len(shown):,} were not shown" in done
    # The flood costs the record ten rows of its one level: the quiet turn's, and those.
    assert [e["level"] for e in events if e["type"] == "tool_log"] == ["info"] * 10
    assert await ActivityEvent.objects.acount() == 2 * quiet + 10
    assert longest < STALL
    assert await still_up()


async def test_a_call_that_never_answers_is_stopped_at_its_deadline(
    settings, hostile, alice, alice_conversation
):
    settings.GLASSBOX_TOOL_TIMEOUT = 1
    hostile()
    events, longest = await run(alice_conversation, alice, "hostile__forever {}")

    assert statuses(events, "failed") == ["“Forever” failed (timed out after 1 s)"]
    assert events[-1]["state"] == "complete"
    assert longest < STALL
    assert await still_up()


async def test_a_question_with_a_100_kb_url_fits_and_the_call_goes_on(
    hostile, alice, alice_conversation
):
    hostile()
    socket = await open_socket(alice_conversation, alice, as_json=True)
    async with Ticker() as ticks:
        await socket.send_to(text_data=json.dumps({"message": "hostile__portal {}"}))
        frames: list[str] = []
        waiting: list[dict] = []
        while not waiting:
            frames.append(await socket.receive_from(timeout=20))
            event = json.loads(frames[-1])
            if event["type"] == "questions":
                waiting = [q for q in event["questions"] if q["state"] == "waiting"]
        (card,) = waiting
        await answer(socket, card)
        events = await json_until_done(socket, 20)
        await finish_turns()
    await socket.disconnect()

    assert_fits(frames + [json.dumps(e, ensure_ascii=False) for e in events])
    assert "… (cut: 96,041 more characters)" in card["url"]
    assert statuses(events, "done")[0] == "“Portal” finished"
    assert events[-1]["state"] == "complete"
    assert ticks.longest < STALL


async def test_a_server_that_asks_again_and_again_has_its_call_stopped_in_words(
    hostile, alice, alice_conversation
):
    hostile()
    socket = await open_socket(alice_conversation, alice, as_json=True)
    answered: set[str] = set()
    events: list[dict] = []
    async with Ticker() as ticks:
        await socket.send_to(text_data=json.dumps({"message": "hostile__nag {}"}))
        while not events or events[-1]["type"] != "done":
            events.append(json.loads(await socket.receive_from(timeout=20)))
            if events[-1]["type"] != "questions":
                continue
            for card in events[-1]["questions"]:
                if card["state"] == "waiting" and card["id"] not in answered:
                    answered.add(card["id"])
                    await answer(socket, card, sure=False)
        await finish_turns()
    await socket.disconnect()

    assert len(answered) == QUESTIONS_PER_CALL
    assert statuses(events, "failed") == [
        f"“Nag” failed (the server asked more than {QUESTIONS_PER_CALL} questions in one call)"
    ]
    assert events[-1]["state"] == "complete"
    assert ticks.longest < STALL
    assert await still_up()


async def test_the_sdk_fields_the_bounded_checks_rely_on_are_still_there():
    """chat.agent.mcp.connections puts RE2-backed output validators in the SDK's private
    cache, and chat.agent.mcp.stdio forks the SDK's stdio transport: an upgrade that renames
    either must fail here, not quietly check results with Python's `re` again."""
    from mcp.client.session import ClientSession

    version = importlib.metadata.version("mcp")
    lookup = inspect.getsource(ClientSession._output_schema_validator)
    assert "self._tool_output_validators.get(name)" in lookup, (
        f"mcp {version} no longer reads compiled output validators from "
        "ClientSession._tool_output_validators: chat.agent.mcp.connections._list must put "
        "its RE2-backed validators where the SDK now looks, or results are checked with re"
    )
    assert "self._tool_output_validators: dict[str, Validator] = {}" in inspect.getsource(
        ClientSession.__init__
    )
    assert version == "2.3.0", (
        f"mcp is {version}: chat.agent.mcp.stdio forks mcp 2.3.0's stdio_client; compare "
        "the new one with it and update the fork, then this pin"
    )
    for helper in (
        "_get_executable_command",
        "_create_platform_compatible_process",
        "get_default_environment",
        "_drain_stdout",
        "_stop_server_process",
        "_aclose_all",
        "_WRITER_FLUSH_TIMEOUT",
    ):
        assert hasattr(bounded_stdio.sdk, helper), f"mcp.client.stdio has no {helper} now"


async def test_the_sessions_output_validators_are_the_re2_ones(hostile, sessions):
    from chat.agent.schemas import validator

    (connection,) = await sessions.connect([hostile()])
    kept = connection.client.session._tool_output_validators
    assert kept, "the hostile server's tools have output schemas"
    built = validator({"type": "object"}, connection.bounds)
    assert all(type(each.checks) is type(built) for each in kept.values())
