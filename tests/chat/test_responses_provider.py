"""Turns against a provider that speaks OpenAI's Responses API (GLASSBOX_MODEL_API=responses),
over real HTTP to a scripted server of the tests' own: the reasoning summary live and kept,
parallel calls with their feedback, usage, encrypted reasoning carried to the next round, and
every way the stream can fail, ending in the same feed lines as Chat Completions."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from activity.models import ModelCall
from chat.agent.client import close_clients
from chat.models import Message, ToolApproval
from chat.turns import resuming
from chat.turns.registry import finish_all
from tests.support.fakes import text_response
from tests.support.provider_server import scripted_provider
from tests.support.responses_server import (
    MODEL,
    Output,
    Reply,
    numbered,
    response,
    responses_server,
    usage,
)
from tests.support.rows import tool_call_of
from tests.support.turns import decided_turn, run_turn

# Transactions of their own: a turn closes its database connections as a request would.
pytestmark = pytest.mark.django_db(transaction=True)

SUMMARY = ("**Weighing the question**\n\nThe user wants numbers.", "I will compute both.")
FEEDBACK_1 = "Adding up the offers"
FEEDBACK_2 = "Working out the monthly pay"
CALLS = (
    ("call_a", "calculator", json.dumps({"feedback_to_user": FEEDBACK_1, "expression": "2+3"})),
    ("call_b", "calculator", json.dumps({"feedback_to_user": FEEDBACK_2, "expression": "60/12"})),
)


@pytest.fixture
def responses_api(settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.GLASSBOX_MODEL_API = "responses"
    settings.GLASSBOX_MODEL = "o4-mini"
    settings.GLASSBOX_PROVIDER_RETRIES = 0
    settings.GLASSBOX_TOOLS = ["chat.agent.builtin_tools.CALCULATOR"]

    def serve(*replies: Reply):
        server = responses_server(list(replies))
        started = server.__enter__()
        settings.OPENAI_BASE_URL = started.url
        served.append(server)
        return started

    served: list = []
    yield serve
    for server in served:
        server.__exit__(None, None, None)


def resume(conversation, user) -> None:
    """Approves the waiting call and runs the turn to its end."""

    asked = ToolApproval.objects.get(answer__conversation=conversation)

    async def decide() -> None:
        try:
            await resuming.decide(
                conversation_id=conversation.pk, call_id=asked.call_id, user=user, approve=True
            )
            await finish_all()
        finally:
            await close_clients()

    async_to_sync(decide)()


def lines(answer: Message) -> list[tuple[str, str, str]]:
    return [
        (e.icon, e.message, e.state)
        for e in answer.answer_feed.events.order_by("seq")
        if e.kind == "status"
    ]


def test_a_reasoning_models_summary_is_shown_live_and_kept_with_its_tokens(
    responses_api, alice_conversation
):
    reply = Output().reasoning(*SUMMARY, encrypted="gAAAA-secret").text("Five and five.")
    server = responses_api(Reply(reply.events(usage(812, 260, reasoning=192, cached=512))))

    answer = run_turn(alice_conversation, "How much is it?")

    assert (answer.state, answer.content) == (Message.State.COMPLETE, "Five and five.")
    (thinking, thought) = lines(answer)
    assert thinking == ("💭", "Thinking…", "in_progress")
    assert thought[0] == "💭" and re.fullmatch(r"Thought for \d+\.\d s", thought[1])
    call = ModelCall.objects.get(feed=answer.feed)
    # The summary's parts, each a paragraph; the encrypted reasoning is never shown or kept.
    assert call.reasoning == "\n\n".join(SUMMARY)
    assert (call.model, call.prompt_tokens, call.completion_tokens) == (MODEL, 812, 260)
    assert (call.reasoning_tokens, call.cached_tokens) == (192, 512)
    feed = answer.answer_feed
    assert (feed.reasoning_tokens, feed.cached_tokens, feed.total_tokens) == (192, 512, 1072)

    # In history, the line and what the model thought.
    client = Client()
    client.force_login(alice_conversation.owner)
    page = client.get(f"/c/{alice_conversation.pk}/").content.decode()
    assert '<details class="reasoning">' in page and "The user wants numbers." in page
    assert "gAAAA-secret" not in page

    (sent,) = server.requests
    assert server.paths == ["/v1/responses"]
    assert (sent["model"], sent["store"], sent["stream"]) == ("o4-mini", False, True)
    assert sent["reasoning"] == {"summary": "auto"}
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["instructions"].startswith("You are Glassbox")
    assert sent["input"] == [{"role": "user", "content": "How much is it?"}]
    (tool,) = sent["tools"]
    assert (tool["type"], tool["name"]) == ("function", "calculator")
    assert "feedback_to_user" in tool["parameters"]["properties"]


def test_parallel_calls_show_their_feedback_and_the_next_round_gets_the_encrypted_reasoning(
    responses_api, alice_conversation
):
    first = Output().reasoning("Two sums.", encrypted="gAAAA-round-0").calls(*CALLS)
    server = responses_api(
        Reply(first.events(usage(400, 90, reasoning=40))),
        Reply(Output().text("5 and 5.").events(usage(700, 20))),
    )

    answer = run_turn(alice_conversation, "Add them up")

    assert (answer.state, answer.content) == (Message.State.COMPLETE, "5 and 5.")
    shown = lines(answer)
    assert ("🧮", FEEDBACK_1, "in_progress") in shown
    assert ("🧮", FEEDBACK_2, "in_progress") in shown
    assert ("🧮", "Calculated 2+3 = 5 for “Adding up the offers”", "done") not in shown
    done = [message for icon, message, state in shown if icon == "🧮" and state == "done"]
    assert done == ["Calculated 2+3 = 5", "Calculated 60/12 = 5"]
    calls = answer.answer_feed.events.filter(kind="tool_call").order_by("seq")
    assert [(c.call_id, tool_call_of(c).arguments["expression"]) for c in calls] == [
        ("call_a", "2+3"),
        ("call_b", "60/12"),
    ]

    later = server.requests[1]["input"]
    assert later[0] == {"role": "user", "content": "Add them up"}
    # The reasoning goes back before the calls it led to, whole and encrypted.
    assert later[1] == {
        "type": "reasoning",
        "id": "rs_0",
        "summary": [{"type": "summary_text", "text": "Two sums."}],
        "encrypted_content": "gAAAA-round-0",
    }
    assert [(i["type"], i["call_id"]) for i in later[2:]] == [
        ("function_call", "call_a"),
        ("function_call", "call_b"),
        ("function_call_output", "call_a"),
        ("function_call_output", "call_b"),
    ]
    assert json.loads(later[4]["output"])["result"] == 5
    assert later[2]["arguments"] == CALLS[0][2]
    rounds = ModelCall.objects.filter(feed=answer.feed).order_by("round")
    assert [(c.round, c.reasoning, c.reasoning_tokens) for c in rounds] == [
        (0, "Two sums.", 40),
        (1, "", 0),
    ]


def test_the_next_turn_has_the_answers_but_never_the_reasoning(responses_api, alice_conversation):
    server = responses_api(
        Reply(Output().reasoning("Private thought.", encrypted="gAAAA-1").text("First.").events()),
        Reply(Output().text("Second.").events()),
    )
    run_turn(alice_conversation, "One?")
    run_turn(alice_conversation, "Two?")

    assert server.requests[1]["input"] == [
        {"role": "user", "content": "One?"},
        {"role": "assistant", "content": "First."},
        {"role": "user", "content": "Two?"},
    ]


def test_a_refusal_is_the_answer_people_read(responses_api, alice_conversation):
    responses_api(Reply(Output().text("I can't help with that.", refusal=True).events()))

    answer = run_turn(alice_conversation, "Something forbidden")

    assert (answer.state, answer.content) == (Message.State.COMPLETE, "I can't help with that.")


def test_an_answer_cut_at_its_token_limit_is_kept_as_chat_completions_keeps_it(
    responses_api, alice_conversation
):
    reply = Output().text("A long answer that")
    responses_api(
        Reply(reply.events(end="incomplete", incomplete_details={"reason": "max_output_tokens"}))
    )

    answer = run_turn(alice_conversation, "Tell me everything")

    assert (answer.state, answer.content) == (Message.State.COMPLETE, "A long answer that")


def test_a_server_that_sends_only_each_items_end_is_read_once(responses_api, alice_conversation):
    """Proxies that build the stream from a finished reply send the items whole."""
    reply = Output().reasoning("Quick.").text("Whole text.")
    only_ends = [
        e
        for e in reply.events(usage(10, 5))
        if e["type"] in ("response.output_item.done", "response.completed")
    ]
    responses_api(Reply(only_ends))

    answer = run_turn(alice_conversation, "Hi")

    assert answer.content == "Whole text."
    assert ModelCall.objects.get(feed=answer.feed).reasoning == "Quick."


def test_a_reply_sent_whole_is_read_as_one(responses_api, alice_conversation):
    text = {"type": "output_text", "text": "All at once.", "annotations": []}
    message = {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
               "content": [text]}  # fmt: skip
    responses_api(Reply(whole=response("completed", [message], usage(3, 4))))

    answer = run_turn(alice_conversation, "Hi")

    assert (answer.state, answer.content) == (Message.State.COMPLETE, "All at once.")
    assert ModelCall.objects.get(feed=answer.feed).completion_tokens == 4


def test_reasoning_off_asks_for_no_reasoning_options(responses_api, alice_conversation, settings):
    settings.GLASSBOX_REASONING_SUMMARY = "off"
    server = responses_api(Reply(Output().text("Plain.").events()))

    run_turn(alice_conversation, "Hi")

    assert "reasoning" not in server.requests[0] and "include" not in server.requests[0]


PARTIAL = Output().text("Partial answer here", size=4).events()
# After the text's first three deltas (created, in_progress, item added, part added first).
MID_TEXT = 7
ERROR_EVENT = {"type": "error", "code": "server_error", "message": "The server had an error",
               "param": None}  # fmt: skip
FAILED = {
    "type": "response.failed",
    "response": response(
        "failed", [], error={"code": "server_error", "message": "The server had an error"}
    ),
}
BROKE_OFF = "The model provider's reply broke off before it was finished"
UNREADABLE = "The model provider sent an unreadable reply"
STOPPED = "The model provider stopped with an error: “The server had an error”"

FAILURES = {
    "error event mid-stream": (
        Reply(numbered(*PARTIAL[:MID_TEXT], ERROR_EVENT)), STOPPED, "Partial answ"
    ),
    "response.failed": (Reply(numbered(*PARTIAL[:MID_TEXT], FAILED)), STOPPED, "Partial answ"),
    "connection cut mid-stream": (Reply(PARTIAL, cut_after=MID_TEXT), BROKE_OFF, "Partial answ"),
    "stream ended without its end": (Reply(PARTIAL[:MID_TEXT]), BROKE_OFF, "Partial answ"),
    "malformed event": (
        Reply(PARTIAL[:MID_TEXT], raw=b"data: {not json\n\n"), UNREADABLE, "Partial answ"
    ),
    "delta of the wrong type": (
        Reply([*PARTIAL[:MID_TEXT], {**PARTIAL[MID_TEXT], "delta": 42}]), UNREADABLE,
        "Partial answ",
    ),
    "item that is not an object": (
        Reply([*PARTIAL[:2], {"type": "response.output_item.added", "output_index": 0,
                              "item": "message"}]), UNREADABLE, "",
    ),
    "HTTP 400 with the provider's words": (
        Reply(status=400, error={"message": "Unsupported parameter: 'reasoning.summary'"}),
        "The model provider answered with an error (400): “Unsupported parameter: "
        "'reasoning.summary'”",
        "",
    ),
    "HTTP 401": (
        Reply(status=401, error={"message": "Incorrect API key sk-te**st"}),
        "The model provider refused our credentials", "",
    ),
}  # fmt: skip


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_reply_ends_the_turn_with_the_feed_line_chat_completions_gives(
    responses_api, alice_conversation, failure
):
    reply, reason, kept = FAILURES[failure]
    responses_api(reply, Reply(Output().text("All good.").events()))

    answer = run_turn(alice_conversation, "How do I negotiate my salary?")

    assert answer.state == Message.State.FAILED
    assert answer.content.startswith(kept)
    last = answer.answer_feed.events.order_by("-seq").first()
    assert last is not None
    assert (last.icon, last.message, last.state) == ("❌", reason, "failed")
    call = ModelCall.objects.get(feed=answer.feed)
    assert call.error_type  # the failed request is kept with its kind

    # The conversation stays usable.
    again = run_turn(alice_conversation, "And now?")
    assert (again.state, again.content) == (Message.State.COMPLETE, "All good.")


def test_the_encrypted_reasoning_outlasts_an_approvals_pause(
    responses_api, alice_conversation, alice, settings
):
    settings.GLASSBOX_APPROVAL = {"calculator": True}
    asked = Output().reasoning("One sum.", encrypted="gAAAA-before-pause").calls(CALLS[0])
    server = responses_api(
        Reply(asked.events()), Reply(Output().text("It is 5.").events(usage(50, 5)))
    )

    answer = decided_turn(alice_conversation, "Add them", user=alice, approve=True)

    assert (answer.state, answer.content) == (Message.State.COMPLETE, "It is 5.")
    resumed = server.requests[1]["input"]
    assert [item.get("type") for item in resumed] == [
        None, "reasoning", "function_call", "function_call_output"
    ]  # fmt: skip
    assert resumed[1]["encrypted_content"] == "gAAAA-before-pause"


def test_a_pause_written_over_responses_resumes_over_chat_completions_without_its_reasoning(
    responses_api, alice_conversation, alice, settings
):
    settings.GLASSBOX_APPROVAL = {"calculator": True}
    asked = Output().reasoning("One sum.", encrypted="gAAAA-before-pause").calls(CALLS[0])
    responses_api(Reply(asked.events()))
    answer = run_turn(alice_conversation, "Add them")
    assert answer.state == Message.State.WAITING

    with scripted_provider([text_response("It is 5.")]) as chat:
        settings.OPENAI_BASE_URL = chat.url
        settings.GLASSBOX_MODEL_API = "chat_completions"
        resume(alice_conversation, alice)

    answer.refresh_from_db()
    assert (answer.state, answer.content) == (Message.State.COMPLETE, "It is 5.")
    (sent,) = chat.requests
    assert "gAAAA" not in json.dumps(sent)
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
