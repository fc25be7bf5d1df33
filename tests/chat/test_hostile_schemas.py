"""Schemas an MCP server writes cannot stall the process: patterns run on RE2 (linear time),
a pattern RE2 cannot take, a schema too deep or too large, and tools beyond the bound are
not offered (the reason on the health page); answers to a server's questions and approval
edits are checked the same way, an e-mail address in bounded time."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import jsonschema
import pytest
from django.test import AsyncClient

from chat.agent.mcp.elicit_schema import Invalid, UnsupportedForm, check_answer, read_form
from chat.agent.mcp.limits import DEFAULT_LIMITS
from chat.agent.schemas import BOUNDS, first_error, screened
from chat.asks.receipts import EditRefused, Edits, edited_arguments
from chat.servers.heartbeat import beat
from tests.support.mcp import stdio
from tests.support.sockets import json_turn

CATASTROPHIC = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^(a+)+$"}}}
# 27 `a`s and a `!`: Python's `re` (through jsonschema) took 8.9 s on it, doubling per `a`.
# Python's `re` takes about 7 s at 27 letters and twice that for each more: at 34, a quarter
# of an hour, so a stall cannot hide under any bound below.
EVIL = "a" * 34 + "!"
# Well under Python's seconds, generous for a shared machine (RE2 takes microseconds).
# CPU time of the check (time.thread_time): a loaded machine that sets the test aside adds none.
FAST = 0.5
# Listing 10,000 tools takes 3 s on a quiet machine; two suites side by side on two cores can
# stretch it past the 10 s default, which would leave the server down for the wrong reason.
PATIENT = dataclasses.replace(DEFAULT_LIMITS, connect_timeout=120.0)


def hostile(case: str, **env: str):
    return stdio("hostile", "tests.support.hostile_mcp_server", HOSTILE_SCHEMA=case, **env)


def test_a_catastrophic_pattern_is_checked_in_linear_time():
    started = time.thread_time()
    error = first_error(CATASTROPHIC, {"text": EVIL})
    assert time.thread_time() - started < FAST
    assert error is not None and error.validator == "pattern"
    assert first_error(CATASTROPHIC, {"text": "a" * 27}) is None


def test_pattern_properties_and_additional_properties_run_on_re2_too():
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    started = time.thread_time()
    error = first_error(schema, {EVIL: 1})
    assert time.thread_time() - started < FAST
    assert error is not None and "does not match any of the regexes" in error.message
    assert first_error(schema, {"aaaa": 1}) is None
    assert first_error(schema, {"aaaa": "one"}) is not None


def test_unique_items_is_checked_in_linear_time_with_json_equality():
    schema = {"type": "array", "uniqueItems": True}
    started = time.thread_time()
    assert first_error(schema, [{"n": n} for n in range(15_000)]) is None
    assert time.thread_time() - started < FAST * 4
    assert first_error(schema, [{"n": 1}, {"n": 1.0}]) is not None
    assert first_error(schema, [1, True]) is None


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [(r"^(a)\1$", "backreference"), (r"(?=a)a", "lookahead"), (r"(?<!a)b", "lookbehind")],
)
def test_a_pattern_re2_cannot_take_is_refused_in_words(pattern, construct):
    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": pattern}}}
    assert screened(schema) == f"its pattern “{pattern}” cannot be checked in linear time"


def test_a_schema_a_thousand_levels_deep_or_of_ten_megabytes_is_refused_without_recursing():
    deep: dict = {"type": "string"}
    for _level in range(1000):
        deep = {"type": "array", "items": deep}
    assert screened(deep) == "its schema is nested more than 32 levels deep"
    huge = {"type": "object", "description": "x" * (10 * 1024 * 1024)}
    assert screened(huge) == "its schema is 10240 KB, over the 256 KB allowed"


def test_arguments_over_the_bound_are_refused_before_their_schema_runs():
    from chat.agent.schemas import TooLong

    with pytest.raises(TooLong) as refused:
        first_error(CATASTROPHIC, {"text": "a" * (BOUNDS.argument_chars + 1)})
    assert refused.value.field == "text"


def test_the_demo_servers_pydantic_schemas_validate_as_before():
    """What jsonschema itself says of the demo server's kind of schema (pydantic's, with
    `$defs` and `anyOf`), the bounded validator says too."""
    from pydantic import BaseModel

    class Address(BaseModel):
        street: str
        zip: str | None = None

    class Order(BaseModel):
        to: Address
        items: list[int]
        note: str = ""

    schema = Order.model_json_schema()
    assert screened(schema) == ""
    values: list[dict[str, Any]] = [
        {"to": {"street": "Via Roma"}, "items": [1, 2]},
        {"to": {"street": 3}, "items": [1]},
        {"to": {"street": "Via Roma"}, "items": ["x"]},
        {"items": []},
    ]
    for value in values:
        plain = jsonschema.exceptions.best_match(
            jsonschema.validators.validator_for(schema)(schema).iter_errors(value)
        )
        ours = first_error(schema, value)
        assert (ours and ours.message) == (plain and plain.message)


def test_a_ten_thousand_character_email_answer_is_refused_fast():
    (field,) = read_form(
        {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}}
    )
    for answer in ("a@" + "." * 9_997 + "@", "a" * 9_980 + "@example.com", "a@" + "b." * 4_999):
        # The check's own CPU time: a loaded machine that sets the test aside adds none.
        started = time.thread_time()
        with pytest.raises(Invalid) as refused:
            check_answer((field,), {"to": answer})
        assert time.thread_time() - started < 0.05
        assert refused.value.errors == {"to": "enter an email address"}
    assert check_answer((field,), {"to": "ada@example.com"}) == {"to": "ada@example.com"}


def test_a_questions_pattern_is_checked_on_re2_and_one_re2_cannot_take_is_declined():
    form: dict[str, Any] = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}},
    }
    fields = read_form(form)
    started = time.thread_time()
    with pytest.raises(Invalid) as refused:
        check_answer(fields, {"code": EVIL})
    assert time.thread_time() - started < FAST
    assert refused.value.errors == {"code": "enter text in the form the server asks for"}
    assert check_answer(fields, {"code": "aaa"}) == {"code": "aaa"}

    form["properties"]["code"]["pattern"] = r"^(a)\1$"
    with pytest.raises(UnsupportedForm, match=r"cannot be checked in linear time"):
        read_form(form)


def test_an_approval_edit_is_checked_on_re2_and_its_email_in_bounded_time():
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^(a+)+$"},
            "to": {"type": "string", "format": "email"},
        },
    }
    started = time.thread_time()
    with pytest.raises(EditRefused) as refused:
        edited_arguments(
            parameters, {"code": "a", "to": "a@b.co"}, Edits({"code": EVIL, "to": "a@b.co"})
        )
    assert time.thread_time() - started < FAST
    assert refused.value.field == "code"
    with pytest.raises(EditRefused) as refused:
        edited_arguments(parameters, {}, Edits({"code": "a", "to": "a@" + "b." * 4_999}))
    assert refused.value.problem == "Enter a valid email address."

    parameters["properties"]["code"]["pattern"] = r"(a)\1"
    with pytest.raises(EditRefused, match="cannot check edits"):
        edited_arguments(parameters, {}, Edits({"code": "aa"}))


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_catastrophic_pattern_from_a_real_server_stalls_no_one(
    settings, sessions, alice, alice_conversation
):
    """While the call's arguments are checked, another coroutine's 10 ms ticks keep coming."""
    settings.GLASSBOX_MCP_SERVERS = [hostile("catastrophic")]
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()  # the loop's own pace, in wall time
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        events = await json_turn(alice_conversation, alice, f'hostile__echo {{"text": "{EVIL}"}}')
    finally:
        stop.set()
        await ticking
    failed = [e for e in events if e["type"] == "status" and e["state"] == "failed"]
    assert failed and "does not match" in failed[0]["message"]
    assert events[-1]["state"] == "complete"
    # Generous for a loaded 2-core machine: the turn's own work also holds the loop a little.
    assert gaps and max(gaps) < 2.0


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("case", "env", "reason"),
    [
        (
            "backreference",
            {},
            "tool echo: its pattern “^(a)\\1$” cannot be checked in linear time",
        ),
        (
            "deep",
            {"HOSTILE_DEPTH": "100"},
            "tool echo: its schema is nested more than 32 levels deep",
        ),
        (
            "huge",
            {"HOSTILE_HUGE_KB": "1024"},
            "tool echo: its schema is 1024 KB, over the 256 KB allowed",
        ),
    ],
)
async def test_a_tool_whose_schema_cannot_be_checked_is_not_offered_and_the_health_page_says_why(
    settings, sessions, admin_user, case, env, reason
):
    spec = hostile(case, **env)
    settings.GLASSBOX_MCP_SERVERS = [spec]
    (connection,) = await sessions.connect([spec], limits=PATIENT)
    assert connection.client is not None
    assert [tool.name for tool in connection.tools] == ["ping"]
    assert connection.not_offered == (reason,)

    await beat("host:1", connection.since, [spec], first=True)
    client = AsyncClient()
    await client.aforce_login(admin_user)
    page = (await client.get("/admin/servers/mcpserver/health/")).content.decode()
    shown = reason.replace("“", "&ldquo;").replace("”", "&rdquo;")
    assert f'<p class="not-offered">Not offered: {reason}</p>' in page or shown in page
    sighting = page.split('data-server="hostile" data-worker="host:1">')[1].split("</tr>")[0]
    assert reason in sighting


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_schema_deeper_than_the_sdk_carries_leaves_the_server_down_with_a_reason(
    sessions,
):
    (connection,) = await sessions.connect([hostile("deep")], limits=PATIENT)
    assert connection.client is None and connection.tools == []
    assert str(connection.reason).startswith("it failed to start a session")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_listing_of_ten_megabytes_leaves_the_server_down_saying_so(
    settings, sessions, admin_user
):
    """A 10 MB schema makes a listing over the largest message a server may send
    (chat.agent.mcp.stdio): dropped unread, and the reason in words on the health page."""
    spec = hostile("huge")
    settings.GLASSBOX_MCP_SERVERS = [spec]
    (connection,) = await sessions.connect([spec], limits=PATIENT)
    assert connection.client is None and connection.tools == []
    reason = "it sent a message of 10 MB, over the 4 MB allowed"
    assert str(connection.reason) == reason

    await beat("host:1", connection.since, [spec], first=True)
    client = AsyncClient()
    await client.aforce_login(admin_user)
    page = (await client.get("/admin/servers/mcpserver/health/")).content.decode()
    sighting = page.split('data-server="hostile" data-worker="host:1">')[1].split("</tr>")[0]
    assert reason in sighting


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_ten_thousand_tools_are_cut_to_the_bound_with_a_reason(sessions):
    (connection,) = await sessions.connect([hostile("many")], limits=PATIENT)
    assert [tool.name for tool in connection.tools] == [f"echo_{n}" for n in range(512)]
    assert connection.not_offered == ("9488 tools were not offered: a server may offer 512",)
