"""One inbox: a badge on every page counts what waits for the user across conversations,
and /inbox/ lists each with its deadline and card, answerable there (without JavaScript too);
the turn goes on in its conversation. Also over the API."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import AsyncClient
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.asks.inbox import waiting_count, waiting_items
from chat.models import Conversation, Elicitation, Message, OutboxEmail, ToolApproval
from chat.turns.registry import finish_all

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EMAIL = "Email advisor@example.com: can we meet?"


async def logged_in(user) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


async def waiting_in(client, conversation) -> ToolApproval:
    """A turn of `conversation` that waits for its approval (its task ended there)."""
    await client.post(f"/c/{conversation.pk}/act/", {"message": EMAIL})
    await finish_all()
    return await ToolApproval.objects.select_related("answer").aget(
        answer__conversation=conversation, decision=""
    )


def badge(page: str) -> str:
    found = re.search(r'<a id="inbox-badge"[^>]*>(.*?)</a>', page, re.S)
    assert found, "no inbox badge on the page"
    return re.sub(r"<[^>]+>", "", found[1]).strip()


async def test_the_badge_on_every_page_counts_what_waits_across_conversations(
    alice, alice_conversation, bob
):
    client = await logged_in(alice)
    other = await Conversation.objects.acreate(owner=alice, title="Second")
    await waiting_in(client, alice_conversation)
    await waiting_in(client, other)

    for url in ("/", f"/c/{alice_conversation.pk}/", "/preferences/", "/inbox/"):
        page = (await client.get(url)).content.decode()
        assert badge(page) == "Inbox 2", url
        assert 'href="/inbox/"' in page
    # Kept current by a small poll where JavaScript runs: the same link, counted again.
    fragment = (await client.get("/inbox/badge/")).content.decode()
    assert badge(fragment) == "Inbox 2" and 'hx-trigger="every 10s"' in fragment
    # Nobody else's calls count.
    assert badge((await (await logged_in(bob)).get("/")).content.decode()) == "Inbox"


async def test_the_inbox_lists_each_waiting_call_with_its_deadline_and_what_will_run(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_in(client, alice_conversation)

    page = (await client.get("/inbox/")).content.decode()

    assert f'href="/c/{alice_conversation.pk}/#m-{approval.answer_id}"' in page
    assert "· Send an email" in page and "Approve “Send an email”?" in page
    deadline = re.search(r'class="deadline">until <time datetime="([^"]+)"', page)
    assert deadline and deadline[1].startswith(approval.deadline.strftime("%Y-%m-%dT%H:%M"))
    assert 'readonly value="advisor@example.com"' in page
    assert approval.fingerprint[7:19] in page
    assert f'action="/inbox/{alice_conversation.pk}/act/"' in page
    # Read-only until Change: the approve form sends no argument, only what was shown.
    assert 'name="argument.to"' not in page and "feedback_to_user" not in page
    change = f'href="/inbox/?change={approval.answer_id}#approval-{approval.answer_id}"'
    assert change in page

    changing = (await client.get(f"/inbox/?change={approval.answer_id}")).content.decode()
    assert 'name="argument.to" value="advisor@example.com"' in changing
    assert "Approve with these arguments" in changing


async def test_a_call_approved_from_the_inbox_goes_on_in_its_conversation(
    alice, alice_conversation, bob
):
    client = await logged_in(alice)
    approval = await waiting_in(client, alice_conversation)
    url = f"/inbox/{alice_conversation.pk}/act/"

    outsider = await logged_in(bob)
    assert (await outsider.post(url, {"approve": approval.call_id})).status_code == 404
    answered = await client.post(
        url, {"approve": approval.call_id, "fingerprint": approval.fingerprint}
    )
    await finish_all()

    assert answered.status_code == 302 and answered["Location"] == "/inbox/"
    answer = await Message.objects.aget(pk=approval.answer_id)
    assert answer.state == Message.State.COMPLETE
    assert (await OutboxEmail.objects.aget()).to == "advisor@example.com"
    page = (await client.get("/inbox/")).content.decode()
    assert "Nothing waits for you." in page and badge(page) == "Inbox"


async def test_the_edit_form_approves_with_the_edited_arguments_read_by_their_types(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_in(client, alice_conversation)

    answered = await client.post(
        f"/inbox/{alice_conversation.pk}/act/",
        {
            "approve": approval.call_id,
            "argument.to": "dean@example.com",
            "argument.subject": "Meeting",
            "argument.body": "Tuesday at ten?",
        },
    )
    await finish_all()

    assert answered.status_code == 302
    mail = await OutboxEmail.objects.aget()
    assert (mail.to, mail.subject, mail.body) == ("dean@example.com", "Meeting", "Tuesday at ten?")
    await approval.arefresh_from_db()
    assert (approval.edited_arguments or {}).get("to") == "dean@example.com"


async def test_an_invalid_edit_from_the_inbox_shows_why_and_the_call_still_waits(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_in(client, alice_conversation)

    refused = await client.post(
        f"/inbox/{alice_conversation.pk}/act/",
        {"approve": approval.call_id, "argument.to": "", "argument.subject": "s",
         "argument.body": "b"},
    )  # fmt: skip

    page = refused.content.decode()
    assert refused.status_code == 400
    assert "The edited argument “to” is not valid" in page
    await approval.arefresh_from_db()
    assert approval.decision == "" and badge(page) == "Inbox 1"
    assert not await OutboxEmail.objects.aexists()
    # A field the tool does not have, or edits with a denial, are refused the same way.
    stray = await client.post(
        f"/inbox/{alice_conversation.pk}/act/", {"approve": approval.call_id, "argument.cc": "x"}
    )
    assert stray.status_code == 400 and "This tool has no argument “cc”." in stray.content.decode()
    denied_with_edits = await client.post(
        f"/inbox/{alice_conversation.pk}/act/", {"deny": approval.call_id, "argument.to": "x"}
    )
    assert "Only an approval can change the call" in denied_with_edits.content.decode()
    assert (await ToolApproval.objects.aget()).decision == ""


async def test_programs_read_the_inbox_over_the_api(alice, alice_conversation, bob):
    client = await logged_in(alice)
    approval = await waiting_in(client, alice_conversation)

    (item,) = (await client.get("/api/inbox/")).json()
    assert item["kind"] == "approval" and item["conversation"] == str(alice_conversation.pk)
    assert item["api_url"] == (
        f"/api/conversations/{alice_conversation.pk}/approvals/{approval.call_id}/"
    )
    assert item["deadline"]
    assert (await (await logged_in(bob)).get("/api/inbox/")).json() == []


async def test_the_badge_counts_every_kind_that_waits_in_one_query(alice, alice_conversation, bob):
    client = await logged_in(alice)
    await waiting_in(client, alice_conversation)
    running = await Conversation.objects.acreate(owner=alice, title="Asked")
    answer = await Message.objects.acreate(
        conversation=running, role="assistant", state=Message.State.STREAMING
    )
    deadline = timezone.now() + timedelta(minutes=5)
    for state in (Elicitation.State.WAITING, Elicitation.State.ACCEPTED):
        await Elicitation.objects.acreate(
            answer=answer, call_id="c", server="surveys", mode="form", message="Who?",
            deadline=deadline, state=state,
        )  # fmt: skip

    counted = await sync_to_async(_counted_with_queries)(alice)

    assert counted == (2, 1)  # the waiting call and the waiting question, one statement
    assert await sync_to_async(waiting_count)(bob) == 0


def _counted_with_queries(user) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        count = waiting_count(user)
    return count, len(queries)


def item_in(page: str, key: str) -> str:
    found = re.search(rf'<li id="{key}"[^>]*>(.*?)</li>', page, re.S)
    assert found, f"no item {key} in the inbox"
    return found[1]


async def test_an_untitled_conversations_item_is_named_as_the_list_names_it_and_links_to_its_turn(
    alice, alice_conversation
):
    client = await logged_in(alice)
    approval = await waiting_in(client, alice_conversation)  # untitled: named by the question
    titled = await Conversation.objects.acreate(owner=alice, title="Meeting the advisor")
    other = await waiting_in(client, titled)

    page = (await client.get("/inbox/")).content.decode()

    untitled_item = item_in(page, f"approval-{approval.pk}")
    link = f'<a href="/c/{alice_conversation.pk}/#m-{approval.answer_id}">{EMAIL}</a>'
    assert link in untitled_item and "New conversation" not in untitled_item
    listed = (await client.get("/")).content.decode()
    assert f">{EMAIL}</a>" in listed  # the same name as in the conversation list
    titled_link = f'<a href="/c/{titled.pk}/#m-{other.answer_id}">Meeting the advisor</a>'
    assert titled_link in item_in(page, f"approval-{other.pk}")
    (api_item, _) = sorted(
        (await client.get("/api/inbox/")).json(), key=lambda i: i["conversation_title"]
    )
    assert api_item["conversation_title"] == EMAIL


async def test_a_waiting_question_is_named_by_its_conversations_first_question_too(alice):
    untitled = await Conversation.objects.acreate(owner=alice)
    await Message.objects.acreate(conversation=untitled, role="user", content="Which survey?")
    answer = await Message.objects.acreate(
        conversation=untitled, role="assistant", state=Message.State.STREAMING
    )
    await Elicitation.objects.acreate(
        answer=answer, call_id="c", server="surveys", mode="form", message="Who?",
        deadline=timezone.now() + timedelta(minutes=5),
    )  # fmt: skip

    (item,) = await sync_to_async(waiting_items)(alice)

    assert (item.kind, item.conversation_title) == ("question", "Which survey?")
    assert item.turn_url == f"/c/{untitled.pk}/#m-{answer.pk}"


async def test_the_inbox_reads_the_conversations_names_without_a_query_per_item(
    alice, alice_conversation
):
    client = await logged_in(alice)
    await waiting_in(client, alice_conversation)
    one = await sync_to_async(_items_with_queries)(alice)
    for _ in range(3):
        await waiting_in(client, await Conversation.objects.acreate(owner=alice))
    four = await sync_to_async(_items_with_queries)(alice)

    assert (len(one[0]), len(four[0])) == (1, 4)
    assert [item.conversation_title for item in four[0]] == [EMAIL] * 4
    assert four[1] == one[1]


def _items_with_queries(user) -> tuple[list, int]:
    with CaptureQueriesContext(connection) as queries:
        items = waiting_items(user)
    return items, len(queries)
