"""Regenerate: a new answer to the last question replaces the old one on the page and for
the model; the old one stays in history as an earlier version, with its feed."""

from __future__ import annotations

import json

import pytest

from activity.models import ActivityFeed
from chat.models import Message
from tests.support.sockets import finish_turns, frames_until_done, json_until_done, open_socket
from tests.support.turns import run_turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def regenerate(socket, answer_id) -> None:
    await socket.send_to(
        text_data=json.dumps({"regenerate": str(answer_id), "HEADERS": {"HX-Request": "true"}})
    )


async def test_a_new_answer_replaces_the_last_one_which_stays_as_an_earlier_version(
    alice, alice_conversation, knowledge_base
):
    from asgiref.sync import sync_to_async

    first = await sync_to_async(run_turn)(alice_conversation, "How do I negotiate my salary?")
    socket = await open_socket(alice_conversation, alice)
    await regenerate(socket, first.pk)
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    started = frames[0]
    # The old answer folds into an earlier version in place; no question is asked again.
    assert (
        f'<article id="m-{first.pk}" class="message assistant state-complete superseded"'
        in started
    )
    assert '<details class="earlier-version">' in started
    assert 'class="message user' not in started
    second = await Message.objects.aget(replaces=first)
    assert second.state == Message.State.COMPLETE and second.content
    assert await Message.objects.filter(role="user").acount() == 1
    # Both feeds stay for the audit.
    assert await ActivityFeed.objects.acount() == 2
    page = await sync_to_async(_page)(alice, alice_conversation)
    assert page.count('<details class="earlier-version">') == 1
    assert page.count('name="regenerate"') == 1  # only the last answer offers it


async def test_the_model_sees_the_new_answer_not_the_replaced_one(
    alice, alice_conversation, knowledge_base
):
    from asgiref.sync import sync_to_async

    from chat.turns.history import amodel_history

    first = await sync_to_async(run_turn)(alice_conversation, "Tell me a joke")
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await regenerate(socket, first.pk)
    events = await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()

    assert events[0] == {
        "type": "turn", "question_id": str(first.pk - 1), "message_id": events[0]["message_id"],
        "replaces": str(first.pk),
    }  # fmt: skip
    second = await Message.objects.aget(pk=int(events[0]["message_id"]))
    later = await sync_to_async(run_turn)(alice_conversation, "Another one?")
    history = await amodel_history(later)
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[1]["content"] == second.content


async def test_only_the_last_finished_answer_can_be_regenerated(
    alice, alice_conversation, knowledge_base
):
    from asgiref.sync import sync_to_async

    first = await sync_to_async(run_turn)(alice_conversation, "Tell me a joke")
    await sync_to_async(run_turn)(alice_conversation, "Another one?")
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await regenerate(socket, first.pk)
    refusal = json.loads(await socket.receive_from(timeout=10))
    await regenerate(socket, "x")
    unreadable = json.loads(await socket.receive_from(timeout=10))
    await socket.disconnect()

    assert refusal == {"type": "error", "message": "Only the last answer can be regenerated."}
    assert unreadable["message"] == "Regenerate needs the id of the answer."
    assert not await Message.objects.filter(replaces__isnull=False).aexists()


def _page(user, conversation) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get(f"/c/{conversation.pk}/").content.decode()


async def test_a_regenerated_answer_counts_against_the_per_minute_limit(
    settings, alice, alice_conversation, knowledge_base
):
    settings.GLASSBOX_TURNS_PER_MINUTE = 2
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await socket.send_to(text_data=json.dumps({"message": "Tell me a joke"}))
    first = await json_until_done(socket)
    await regenerate(socket, first[0]["message_id"])
    second = await json_until_done(socket)
    await regenerate(socket, second[0]["message_id"])
    refusal = json.loads(await socket.receive_from(timeout=5))
    await finish_turns()
    await socket.disconnect()
    assert refusal["type"] == "error"
    assert "asked 2 questions in the last minute" in refusal["message"]
    assert await ActivityFeed.objects.acount() == 2


async def test_the_api_and_both_exports_say_which_answer_replaced_which(
    alice, alice_conversation, knowledge_base
):
    from asgiref.sync import sync_to_async
    from django.test import Client

    first = await sync_to_async(run_turn)(alice_conversation, "Tell me a joke")
    socket = await open_socket(alice_conversation, alice, as_json=True)
    await regenerate(socket, first.pk)
    await json_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    second = await Message.objects.aget(replaces=first)

    def downloads():
        client = Client()
        client.force_login(alice)
        base = f"/c/{alice_conversation.pk}/export"
        api = client.get(f"/api/conversations/{alice_conversation.pk}/").json()
        exported = json.loads(client.get(f"{base}.json").content)
        return api, exported, client.get(f"{base}.md").content.decode()

    api, exported, markdown = await sync_to_async(downloads)()
    for data in (api, exported):
        answers = {m["id"]: m for m in data["messages"] if m["role"] == "assistant"}
        assert (answers[first.pk]["replaced_by"], answers[first.pk]["replaces"]) == (
            second.pk, None
        )  # fmt: skip
        assert (answers[second.pk]["replaces"], answers[second.pk]["replaced_by"]) == (
            first.pk, None
        )  # fmt: skip
    earlier = markdown.index("*Earlier version of this answer, replaced by the next one.*")
    regenerated = markdown.index("*Regenerated: this answer replaces the earlier version above.*")
    assert earlier < markdown.index(first.content.split("\n")[0]) < regenerated
    assert regenerated < markdown.rindex(second.content.split("\n")[0])
