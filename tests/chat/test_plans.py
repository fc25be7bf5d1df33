"""Seed 001's task plans: the agent's update_plan calls are one checklist line, updated in
place live, kept in history, in exports and on every wire; a plan the model got wrong is
refused in words and the turn goes on."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from activity.models import ActivityEvent
from tests.support.api import client_for
from tests.support.audit import sql, verify
from tests.support.fakes import text_response, tool_call_response
from tests.support.provider_server import scripted_provider
from tests.support.sockets import json_turn, turn_frames

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# The demo model plans a question that asks for it and needs two rounds of tools.
PLANNED = "Plan it step by step: what time is it in Europe/Rome, and what is 52000 * 1.07 / 12?"
STEPS = ["Checking the current date and time", "Calculating 52000 * 1.07 / 12"]
PLAN_LINE = re.compile(r'<li id="line-\d+-plan" [^>]*>.*?</ol></li>', re.S)


def page_of(user, conversation, path: str = "") -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/c/{conversation.pk}/{path}").content.decode()


async def test_a_plan_is_one_line_updated_in_place_live_and_as_its_last_update_after_reload(
    alice, alice_conversation
):
    frames = await turn_frames(alice_conversation, alice, PLANNED)

    live = [frame for frame in frames[:-1] if "-plan" in frame]
    added = [frame for frame in live if "beforeend:#lines-" in frame]
    assert len(added) == 1 and len(live) == 3  # one line, replaced by the two updates
    assert all(re.search(r'<li id="line-\d+-plan" [^>]*hx-swap-oob="true"', f) for f in live[1:])
    first, last = (PLAN_LINE.search(frame).group() for frame in (live[0], live[-1]))
    assert first.count("step-in_progress") == 1 and first.count("step-pending") == 1
    assert last.count("step-done") == 2 and "Plan: all 2 steps done" in last
    assert all(step in last for step in STEPS)

    page = await sync_to_async(page_of)(alice, alice_conversation)
    kept = PLAN_LINE.findall(page)
    assert len(kept) == 1 and kept[0].count("step-done") == 2
    # Planning is no tool the turn used: the fold counts the clock and the calculator.
    assert '<span class="text">Used 2 tools</span>' in page
    # The Markdown download keeps the checklist under the plan's line.
    markdown = await sync_to_async(page_of)(alice, alice_conversation, "export.md")
    assert "- 📋 Plan: all 2 steps done\n" + "".join(f"  - [x] {s}\n" for s in STEPS) in markdown


async def test_programs_get_each_update_and_the_export_keeps_them_sealed(
    alice, alice_conversation
):
    events = await json_turn(alice_conversation, alice, PLANNED)

    plans = [event for event in events if event["type"] == "plan"]
    assert [[step["state"] for step in plan["steps"]] for plan in plans] == [
        ["in_progress", "pending"],
        ["done", "in_progress"],
        ["done", "done"],
    ]
    assert [step["text"] for step in plans[-1]["steps"]] == STEPS
    # No line of their own: no status names the plan tool.
    assert not [e for e in events if e["type"] == "status" and e.get("tool") == "update_plan"]

    client = await client_for(alice)
    response = await client.get("/api/feeds/export/?format=ndjson")
    body = b"".join([part async for part in response.streaming_content]).decode()
    (feed,) = [json.loads(line) for line in body.splitlines()]
    exported = [event for event in feed["events"] if event["type"] == "plan"]
    assert [e["steps"] for e in exported] == [p["steps"] for p in plans]
    stored = await sync_to_async(list)(ActivityEvent.objects.filter(kind="plan").order_by("seq"))
    assert [row.to_event().steps[-1].state for row in stored] == ["pending", "in_progress", "done"]
    assert (await sync_to_async(verify)())[0] == 0
    # A step ticked off behind the application's back breaks the feed's chain.
    await sync_to_async(sql)(
        "UPDATE activity_activityevent SET arguments = %s WHERE id = %s",
        json.dumps({"steps": [{**step, "state": "done"} for step in plans[0]["steps"]]}),
        stored[0].pk,
    )
    status, said = await sync_to_async(verify)()
    assert status == 1 and f"BROKEN, event seq {stored[0].seq} does not match" in said


def planning(steps: object) -> list[list[dict]]:
    arguments = json.dumps({"steps": steps})
    called = tool_call_response(("call_p", "update_plan", arguments), size=40)
    return [called, text_response("Ok.")]


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        ([{"text": f"Step {n}", "state": "pending"} for n in range(21)], "at most 20 items"),
        ([{"text": "x" * 201, "state": "pending"}], "at most 200 characters"),
        ([{"text": "\x00\x07 ", "state": "pending"}], "a step needs words"),
        ([{"text": "Search", "state": "started"}], "'steps.0.state' is invalid"),
    ],
)
async def test_a_plan_the_model_got_wrong_is_refused_in_words_and_the_answer_goes_on(
    alice, alice_conversation, settings, steps, said
):
    with scripted_provider(planning(steps)) as provider:
        settings.OPENAI_API_KEY = "sk-test"
        settings.OPENAI_BASE_URL = provider.url
        settings.GLASSBOX_MODEL = "scripted"
        events = await json_turn(alice_conversation, alice, "Plan my week")
        told = provider.requests[-1]["messages"][-1]

    assert not [event for event in events if event["type"] == "plan"]
    (failed,) = [e for e in events if e["type"] == "status" and e["state"] == "failed"]
    assert failed["icon"] == "❌" and said in failed["message"]
    # Nothing was looked up that the answer now goes without: no 🔄 line.
    assert not [e for e in events if e.get("tool") == "fallback"]
    assert said in told["content"]  # the model is told what to fix
    assert events[-1]["state"] == "complete"
    assert "".join(e["content"] for e in events if e["type"] == "text") == "Ok."


async def test_an_erased_accounts_plans_keep_their_place_and_none_of_their_words(
    alice, alice_conversation
):
    from chat.conversations.erasure import account_erase

    await json_turn(alice_conversation, alice, PLANNED)
    await sync_to_async(account_erase)(user=alice)

    rows = await sync_to_async(list)(ActivityEvent.objects.filter(kind="plan"))
    assert len(rows) == 3 and all(row.arguments is None for row in rows)
    assert all(row.to_event().steps == () for row in rows)  # still read, by every surface
    assert (await sync_to_async(verify)())[0] == 0  # sealed again
