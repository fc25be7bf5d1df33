"""Reasoning models and what turns cost: the 💭 line live and kept, token usage per model
call and per turn, prices, the daily budget, and where all of it shows."""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from activity.models import ActivityFeed, FeedPreferences, ModelCall
from activity.recording.events import ModelCallDone, Status
from activity.usage import prices_from_setting
from chat.agent.loop import run_agent
from chat.agent.policy import AgentPolicy
from chat.models import Conversation
from chat.turns.admission import TurnLimited, admit
from chat.turns.deps import Dependencies, builtin_tools
from tests.support.api import client_for
from tests.support.fakes import FIXTURES, RecordedProvider, scripted_client
from tests.support.matching import found
from tests.support.responses import streamed
from tests.support.rows import answer_feed_id
from tests.support.tool_context import tool_context
from tests.support.turns import run_turn

# Transactions of their own: a turn closes its database connections as a request would.
pytestmark = pytest.mark.django_db(transaction=True)

DEEPSEEK_THOUGHT = (
    "The user asks how to negotiate. Key points: research the range, anchor high, and mind "
    "the timing."
)


def replay(*fixtures: str):
    """The loop's events for one question, the provider replaying recorded streams."""
    transport = RecordedProvider(*fixtures)

    async def collect():
        client = scripted_client(transport)
        async with client:
            return [
                event
                async for event in run_agent(
                    client=client,
                    messages=[{"role": "user", "content": "How do I negotiate my salary?"}],
                    registry=builtin_tools(),
                    policy=AgentPolicy(model="asked-model", max_tool_rounds=2, tool_timeout=5),
                    context=tool_context(),
                )
            ]

    return async_to_sync(collect)(), transport


def thinking_lines(events):
    return [
        (e.message, e.state, e.call_id) for e in events if isinstance(e, Status) and e.icon == "💭"
    ]


def model_calls(events) -> list[ModelCallDone]:
    return [e for e in events if isinstance(e, ModelCallDone)]


@pytest.mark.parametrize(
    ("fixture", "thought", "usage"),
    [
        ("deepseek_reasoning.sse", DEEPSEEK_THOUGHT, (412, 96, 71, 384)),
        (
            "ollama_reasoning.sse",
            "Okay, salary negotiation. I should give concrete steps.",
            (None, None, None, None),
        ),
        (
            "openrouter_reasoning.sse",
            "Weighing anchoring against waiting for their offer.",
            (230, 58, 40, 0),
        ),
    ],
)
def test_each_servers_reasoning_is_one_thinking_line_and_its_usage_is_kept(
    fixture, thought, usage, db
):
    events, transport = replay(fixture)

    (thinking, thought_for) = thinking_lines(events)
    assert thinking == ("Thinking…", "in_progress", "think_0")
    assert re.fullmatch(r"Thought for \d+\.\d s", thought_for[0]) and thought_for[1:] == (
        "done",
        "think_0",
    )
    # The line is finished before the first text.
    first_text = next(i for i, e in enumerate(events) if e.type == "text")
    assert (
        events.index(next(e for e in events if e.type == "status" and e.state == "done"))
        < first_text
    )
    (call,) = model_calls(events)
    assert call.reasoning == thought  # OpenRouter's reasoning_details are not added twice
    assert (
        call.prompt_tokens,
        call.completion_tokens,
        call.reasoning_tokens,
        call.cached_tokens,
    ) == usage
    assert transport.requests[0]["stream_options"] == {"include_usage": True}


def test_each_model_round_thinks_on_its_own_line(knowledge_base):
    events, _ = replay("vllm_reasoning_tool_call.sse", "openai_text.sse")

    lines = [(e.icon, e.state) for e in events if isinstance(e, Status)]
    assert lines[:3] == [("💭", "in_progress"), ("💭", "done"), ("🔍", "in_progress")]
    first, second = model_calls(events)
    assert (first.round, first.model, first.reasoning) == (
        0, "Qwen/Qwen3-8B", "I should search the knowledge base before answering."
    )  # fmt: skip
    # vLLM sends no details: reasoning and cached tokens are unknown, not zero.
    assert (first.prompt_tokens, first.completion_tokens) == (688, 53)
    assert (first.reasoning_tokens, first.cached_tokens) == (None, None)
    assert (second.round, second.reasoning, second.thinking_ms) == (1, "", None)


@pytest.fixture
def deepseek_turn(alice_conversation, settings):
    settings.GLASSBOX_PRICES = prices_from_setting(
        json.dumps({"deepseek-reasoner": {"prompt": 0.55, "completion": 2.19, "cached": 0.14}})
    )
    transport = RecordedProvider("deepseek_reasoning.sse")
    answer = run_turn(
        alice_conversation, "How do I negotiate my salary?",
        Dependencies(client_factory=lambda: scripted_client(transport)),
    )  # fmt: skip
    return answer, transport


def test_a_turn_stores_its_usage_reasoning_and_cost(deepseek_turn):
    answer, _ = deepseek_turn

    feed = ActivityFeed.objects.get(pk=answer.feed_id)
    assert (feed.model, feed.prompt_tokens, feed.completion_tokens) == (
        "deepseek-reasoner",
        412,
        96,
    )
    assert (feed.reasoning_tokens, feed.cached_tokens, feed.total_tokens) == (71, 384, 508)
    # 28 uncached prompt tokens at 0.55, 384 cached at 0.14, 96 completion at 2.19, per 1M:
    # 0.0002794.
    assert feed.cost == Decimal("0.000279")
    call = ModelCall.objects.get(feed=feed)
    assert call.reasoning == DEEPSEEK_THOUGHT and call.thinking_ms is not None


def test_the_reasoning_is_never_sent_back_to_the_model(deepseek_turn, alice_conversation):
    _, transport = deepseek_turn
    transport.files.append(FIXTURES / "openai_text.sse")
    run_turn(
        alice_conversation,
        "And then?",
        Dependencies(client_factory=lambda: scripted_client(transport)),
    )

    later = json.dumps(transport.requests[-1]["messages"])
    assert "Research the market range first" in later  # the answer is history
    assert "anchor high" not in later and "reasoning" not in later


def test_a_provider_without_usage_is_unknown_never_zero(alice_conversation):
    transport = RecordedProvider("ollama_reasoning.sse")
    answer = run_turn(
        alice_conversation, "Hi", Dependencies(client_factory=lambda: scripted_client(transport))
    )

    feed = ActivityFeed.objects.get(pk=answer_feed_id(answer))
    assert (feed.prompt_tokens, feed.total_tokens, feed.cost) == (None, None, None)
    FeedPreferences.objects.create(user=alice_conversation.owner, overrides={"SHOW_USAGE": True})
    usage = found(r'<span class="usage">(.*?)</span>', _page(alice_conversation))
    assert re.fullmatch(r"· 1 step · \d+\.\d s", usage), usage  # no "0 tokens"


def _page(conversation, user=None) -> str:
    client = Client()
    client.force_login(user or conversation.owner)
    return client.get(f"/c/{conversation.pk}/").content.decode()


def test_users_see_steps_and_time_on_the_folded_feed_and_tokens_only_if_they_ask(
    deepseek_turn, alice_conversation
):
    """Seed 002: users do not need token counts; auditors (and users who turn them on) do."""
    page = _page(alice_conversation)
    usage = found(r'<span class="usage">(.*?)</span>', page)
    steps = page.count('<li id="line-')
    assert re.fullmatch(rf"· {steps} steps? · \d+\.\d s", usage), usage

    FeedPreferences.objects.create(user=alice_conversation.owner, overrides={"SHOW_USAGE": True})
    page = _page(alice_conversation)
    assert re.search(
        r'<span class="usage">· \d+ steps? · \d+\.\d s · 508 tokens · 0\.000279 USD</span>', page
    )


@pytest.mark.parametrize(
    ("shown", "line", "text"),
    [("full", True, True), ("duration", True, False), ("off", False, False)],
)
def test_what_users_see_of_the_reasoning_follows_the_setting(
    shown, line, text, settings, alice_conversation, admin_client
):
    settings.GLASSBOX_FEED = {**settings.GLASSBOX_FEED, "SHOW_REASONING": shown}
    transport = RecordedProvider("deepseek_reasoning.sse")
    answer = run_turn(
        alice_conversation, "How?", Dependencies(client_factory=lambda: scripted_client(transport))
    )
    page = _page(alice_conversation)

    assert ("💭" in page) is line
    assert ("Thought for" in page) is line
    assert ('<details class="reasoning">' in page) is text
    assert ("anchor high" in page) is text
    feed_id = answer.feed_id
    admin = admin_client.get(f"/admin/activity/activityfeed/{feed_id}/change/").content.decode()
    assert "anchor high" in admin  # admins always see it


def test_the_api_gives_totals_and_each_model_call(
    deepseek_turn, alice, alice_client, admin_client, settings
):
    feed_id = deepseek_turn[0].feed_id
    listed = alice_client.get("/api/feeds/").json()["results"][0]
    assert listed["usage"] == {
        "model": "deepseek-reasoner", "prompt_tokens": 412, "completion_tokens": 96,
        "reasoning_tokens": 71, "cached_tokens": 384, "total_tokens": 508, "cost": "0.000279",
    }  # fmt: skip
    assert "model_calls" not in listed
    detail = alice_client.get(f"/api/feeds/{feed_id}/").json()
    (first,) = detail["model_calls"]
    assert (first["round"], first["prompt_tokens"], first["reasoning"]) == (
        0,
        412,
        DEEPSEEK_THOUGHT,
    )
    assert first["thinking_ms"] is not None and first["cost"] == "0.000279"

    settings.GLASSBOX_FEED = {**settings.GLASSBOX_FEED, "SHOW_REASONING": "duration"}
    hidden = alice_client.get(f"/api/feeds/{feed_id}/").json()["model_calls"][0]
    assert "reasoning" not in hidden and hidden["reasoning_tokens"] == 71
    audited = admin_client.get(f"/api/feeds/{feed_id}/").json()["model_calls"][0]
    assert audited["reasoning"] == DEEPSEEK_THOUGHT


def test_exports_carry_the_usage(deepseek_turn, alice):
    ndjson, exported = async_to_sync(_exports)(alice)
    line = json.loads(ndjson.splitlines()[0])
    assert line["usage"]["total_tokens"] == 508
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert {(r["model"], r["total_tokens"], r["cost"]) for r in rows} == {
        ("deepseek-reasoner", "508", "0.000279")
    }


async def _exports(user) -> tuple[str, str]:
    client = await client_for(user)
    bodies = []
    for fmt in ("ndjson", "csv"):
        response = await client.get(f"/api/feeds/export/?format={fmt}")
        bodies.append(b"".join(await streamed(response)).decode())
    return bodies[0], bodies[1]


def test_the_demo_model_thinks_when_asked_and_reports_usage(alice_conversation, knowledge_base):
    answer = run_turn(alice_conversation, "Think it through: how do I negotiate my salary?")

    calls = list(ModelCall.objects.filter(feed_id=answer.feed_id).order_by("round"))
    assert len(calls) == 2 and all(c.reasoning and c.prompt_tokens for c in calls)
    assert calls[0].reasoning_tokens == len(calls[0].reasoning) // 4
    feed = ActivityFeed.objects.get(pk=answer_feed_id(answer))
    used = [(c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in calls]
    assert all(c.completion_tokens for c in calls) and feed.total_tokens == sum(used)
    plain = run_turn(alice_conversation, "How do I negotiate my salary?")
    assert not ModelCall.objects.filter(feed_id=plain.feed_id).exclude(reasoning="").exists()
    assert ActivityFeed.objects.get(pk=answer_feed_id(plain)).total_tokens


def test_over_the_daily_budget_a_question_is_refused_saying_when_it_resets(
    alice, alice_conversation, settings, admin_client, knowledge_base
):
    run_turn(alice_conversation, "How do I negotiate my salary?")
    used = ActivityFeed.objects.get().total_tokens
    assert used is not None
    settings.GLASSBOX_DAILY_TOKENS = used

    with pytest.raises(TurnLimited) as refused:
        admit(conversation=Conversation.objects.create(owner=alice), text="One more?")
    message = str(refused.value)
    assert f"You have used {used:,} of your {used:,} tokens for today." in message
    assert re.search(r"starts again at midnight UTC, in \d+ h \d+ min\.$", message)
    dashboard = admin_client.get("/admin/activity/activityfeed/dashboard/").content.decode()
    assert f"<li>alice: {used} tokens</li>" in dashboard
    settings.GLASSBOX_DAILY_TOKENS = used + 1
    assert admit(conversation=Conversation.objects.create(owner=alice), text="Now?")


def test_the_dashboard_sums_tokens_per_user_and_model(deepseek_turn, admin_client):
    page = admin_client.get("/admin/activity/activityfeed/dashboard/").content.decode()
    assert '<tr class="user"><td>alice</td><td>1</td><td>508</td>' in page
    assert '<tr class="model"><td>deepseek-reasoner</td><td>1</td><td>508</td>' in page


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("[1]", "expected an object"),
        ('{"m": {"prompt": 1}}', "give 'prompt' and 'completion'"),
        ('{"m": {"prompt": 1, "completion": -2}}', "prices are zero or more"),
        ('{"m": {"prompt": "x", "completion": 1}}', "prices are numbers"),
        ('{"m": {"prompt": 1, "completion": 1, "tip": 1}}', "unknown field 'tip'"),
    ],
)
def test_bad_prices_say_what_is_wrong(value, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        prices_from_setting(value)


@pytest.mark.asyncio
@pytest.mark.parametrize("shown", ["full", "off"])
async def test_the_live_thinking_line_counts_seconds_then_says_how_long(
    shown, settings, alice, alice_conversation, knowledge_base
):
    from tests.support.sockets import ask, finish_turns, frames_until_done, open_socket

    settings.GLASSBOX_FEED = {**settings.GLASSBOX_FEED, "SHOW_REASONING": shown}
    socket = await open_socket(alice_conversation, alice)
    await ask(socket, "Think it through: how do I negotiate my salary?")
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    live = frames[1:-1]
    thinking = [f for f in live if "Thinking…" in f]
    if shown == "off":
        assert not thinking and not any("Thought for" in f for f in live)
        return
    assert thinking and 'class="elapsed"' in thinking[0]
    assert 'data-format="%(seconds)s s"' in thinking[0]
    done = [f for f in live if "Thought for" in f]
    # Replaced in place: the same line id, now without a counter.
    line_id = found(r'<li id="([^"]+)"', thinking[0])
    assert line_id in done[0] and 'hx-swap-oob="true"' in done[0]
    assert 'class="elapsed"' not in done[0]
