"""The eval dataset: one JSON line per rated or labelled answer or tool call, with the
question, the memory the model saw, each call's arguments, result and approval, the answer,
ratings and labels; the same from `manage.py export_dataset` and from the auditors' API,
filtered, read a chunk of feeds at a time, and loaded as it is by `datasets`."""

from __future__ import annotations

import io
import json

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import AsyncClient
from django.utils.module_loading import import_string

from activity.models import ActivityEvent
from activity.writing.labels import label_call
from chat.conversations.services import answer_rate
from chat.models import Conversation, Message
from chat.turns import datasets
from tests.support.responses import streamed
from tests.support.rows import answer_feed_id
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def settings_tool_names() -> list[str]:
    """The built-in tools a turn offers here (the tests declare no MCP server)."""
    return [import_string(path).name for path in settings.GLASSBOX_TOOLS]


@pytest.fixture
def auditor(db):
    user = get_user_model().objects.create_user("auditor", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_activityfeed"))
    return user


@pytest.fixture
def rated(alice, bob, auditor, alice_conversation, knowledge_base) -> Message:
    run_turn(alice_conversation, "Tell me a joke")  # memory for the next turn
    answer = run_turn(alice_conversation, "How do I negotiate my salary?")
    call_id = ActivityEvent.objects.get(feed=answer.feed_id, kind="tool_call").call_id
    answer_rate(user=alice, answer=answer, rating="up", note="")
    answer_rate(user=alice, answer=answer, rating="down", note="too long")  # the latest counts
    answer_rate(user=alice, answer=answer, rating="up", call_id=call_id)
    label_call(
        user=auditor,
        feed_id=answer_feed_id(answer),
        call_id=call_id,
        label="wrong arguments",
        note="vague",
    )
    run_turn(Conversation.objects.create(owner=bob), "What is 2 + 2?")  # never rated
    return answer


def exported(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("export_dataset", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_each_rated_answer_and_call_is_one_record_with_what_the_model_saw_and_did(rated):
    answer_record, call_record = exported()

    assert answer_record["id"] == f"{rated.pk}:answer" and answer_record["target"] == "answer"
    assert answer_record["question"] == "How do I negotiate my salary?"
    assert [m["role"] for m in answer_record["memory"]] == ["user", "assistant"]
    assert answer_record["memory"][0]["content"] == "Tell me a joke"
    assert answer_record["answer"] == rated.content and answer_record["answer"]
    assert [(r["value"], r["note"], r["by"]) for r in answer_record["ratings"]] == [
        ("down", "too long", "alice")
    ]
    assert answer_record["labels"] == [] and answer_record["call"] is None
    (call,) = answer_record["calls"]
    assert call["tool"] == "search_documents" and call["ok"] is True
    assert json.loads(call["arguments"])["query"] and call["result"]
    assert answer_record["tools_called"] == ["search_documents"]
    # What the model could have called, as each of its requests offered it.
    offered = answer_record["tools_offered"]
    assert "search_documents" in offered and len(offered) > 1
    assert sorted(offered) == sorted(settings_tool_names())

    assert call_record["target"] == "call" and call_record["call"] == call
    assert [r["value"] for r in call_record["ratings"]] == ["up"]
    assert [(x["label"], x["note"], x["by"]) for x in call_record["labels"]] == [
        ("wrong arguments", "vague", "auditor")
    ]


@pytest.mark.parametrize(
    ("args", "targets"),
    [
        (["--rating", "up"], ["call"]),
        (["--rating", "down"], ["answer"]),
        (["--label", "wrong arguments"], ["call"]),
        (["--label", "unsafe"], []),
        (["--tool", "search_documents"], ["answer", "call"]),
        (["--tool", "calculator"], []),
        (["--since", "2000-01-01", "--until", "2000-01-02"], []),
    ],
)
def test_the_filters_choose_the_records(rated, args, targets):
    assert [record["target"] for record in exported(*args)] == targets


def test_feeds_are_read_a_chunk_at_a_time(rated, alice, monkeypatch, knowledge_base):
    again = run_turn(rated.conversation, "How do I negotiate my salary?")
    answer_rate(user=alice, answer=again, rating="up")
    monkeypatch.setattr(datasets, "CHUNK", 1)

    assert [r["id"] for r in exported()] == [
        f"{rated.pk}:answer",
        f"{rated.pk}:{ActivityEvent.objects.get(feed=rated.feed_id, kind='tool_call').call_id}",
        f"{again.pk}:answer",
    ]


def test_the_dataset_loads_with_the_datasets_library(rated, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    path = tmp_path / "dataset.jsonl"
    call_command("export_dataset", "-o", str(path))
    from datasets import load_dataset

    loaded = load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path))

    assert loaded.num_rows == 2
    assert loaded["target"] == ["answer", "call"]
    assert loaded[1]["labels"][0]["label"] == "wrong arguments"
    assert loaded[0]["memory"][0]["content"] == "Tell me a joke"


async def dataset_over_api(user, query: str = "") -> tuple[int, str]:
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get(f"/api/feeds/dataset/{query}")
    if not response.streaming:
        return response.status_code, response.content.decode()
    assert response["Content-Type"] == "application/jsonl"
    return 200, b"".join(await streamed(response)).decode()


def test_auditors_stream_the_same_lines_over_the_api(rated, auditor):
    status, body = async_to_sync(dataset_over_api)(auditor, "?format=jsonl&rating=up")

    assert status == 200
    assert [json.loads(line) for line in body.splitlines()] == exported("--rating", "up")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?format=csv", "format"),
        ("?since=yesterday", "since"),
        ("?rating=meh", "rating"),
        ("?stars=5", "detail"),
        ("?tool=" + "t" * 65, "tool"),
    ],
)
def test_a_query_that_cannot_be_read_is_a_400_naming_it(rated, auditor, query, field):
    status, body = async_to_sync(dataset_over_api)(auditor, query)

    assert status == 400 and field in json.loads(body)


def test_people_who_are_not_auditors_get_no_dataset(rated, alice):
    status, _ = async_to_sync(dataset_over_api)(alice)

    assert status == 403
