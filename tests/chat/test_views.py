from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from chat.models import Conversation, Message
from chat.turns.admission import admit
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def test_anonymous_users_are_sent_to_log_in(client, alice_conversation):
    for url in ["/", alice_conversation.get_absolute_url()]:
        response = client.get(url)
        assert response.status_code == 302
        assert response.url == f"/accounts/login/?next={url}"


def test_logging_in_and_out(client, alice):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-password"})
    assert response.status_code == 302 and response.url == "/"
    assert client.get("/").status_code == 200
    assert b"Log out of Glassbox?" in client.get("/accounts/logout/").content
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert client.get("/").status_code == 302


def test_a_wrong_password_is_refused_with_a_message(client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content


def test_new_conversation_stores_nothing_until_its_first_question(alice_client, alice):
    page = alice_client.get(reverse("chat:conversation_new"))
    assert page.status_code == 200
    assert not Conversation.all_objects.filter(owner=alice).exists()
    content = page.content.decode()
    # The composer and each starter post to the new conversation's address; no socket yet.
    assert 'action="/c/new/"' in content and "ws-connect" not in content
    assert content.count('class="starter"') == 6


def test_a_refused_first_question_stores_no_conversation_and_keeps_the_text(alice_client, alice):
    response = alice_client.post("/c/new/", {"message": "x" * 9000})
    assert response.status_code == 400
    assert not Conversation.all_objects.filter(owner=alice).exists()
    assert "x" * 9000 in response.content.decode()  # still in the box
    for fields in ({"message": "   "}, {"stop": "1"}, {}):
        assert alice_client.post("/c/new/", fields).status_code == 400, fields
    assert not Conversation.all_objects.filter(owner=alice).exists()


def test_the_page_loads_htmx_and_its_ws_extension_from_the_package(alice_client):
    page = alice_client.get("/").content.decode()
    assert "/static/django_htmx/htmx-2.min.js" in page
    assert "/static/django_htmx/ext/hx-ws-2.min.js" in page


def test_the_list_shows_my_conversations_newest_first_titled_by_first_question(
    alice_client, alice, bob, knowledge_base
):
    older = Conversation.objects.create(owner=alice)
    run_turn(older, "How do I negotiate my salary?")
    newer = Conversation.objects.create(owner=alice)
    run_turn(newer, "Tell me a joke about penguins")
    run_turn(older, "And a raise?")  # the older one now has the latest activity
    theirs = Conversation.objects.create(owner=bob)
    run_turn(theirs, "Bob's secret question")

    page = alice_client.get("/").content.decode()
    assert page.index("How do I negotiate my salary?") < page.index(
        "Tell me a joke about penguins"
    )
    assert "2 turns" in page and "1 turn" in page
    assert "Bob&#x27;s secret question" not in page and "secret" not in page


def test_another_users_conversation_is_a_404(client, bob, alice_conversation):
    client.force_login(bob)
    assert client.get(alice_conversation.get_absolute_url()).status_code == 404


def test_an_unknown_conversation_is_a_404(alice_client):
    assert alice_client.get(f"/c/{uuid.uuid4()}/").status_code == 404


def test_history_shows_each_answer_with_its_feed_folded_above_it(
    alice_client, alice_conversation, knowledge_base
):
    answer = run_turn(alice_conversation, "How do I negotiate my salary?")
    run_turn(alice_conversation, "Tell me a joke about penguins")
    page = alice_client.get(alice_conversation.get_absolute_url()).content.decode()

    feed = page[page.index(f'id="feed-{answer.pk}"') :]
    feed = feed[: feed.index("</ol>")]  # its lines (a line holds a details of its own)
    assert "open" not in feed.split(">")[0]  # folded; <details> expands without JavaScript
    assert '📄</span> <span class="text">Searched the knowledge base' in feed
    lines = ["negotiate salary", "Found 3 documents", "Writing the answer…", "Done"]
    positions = [feed.index(line) for line in lines]
    assert positions == sorted(positions)
    assert "Searching the knowledge base…" not in feed  # replaced by the model's feedback
    # The feed sits between the question and the answer.
    assert (
        page.index("How do I negotiate my salary?")
        < page.index(f'id="feed-{answer.pk}"')
        < page.index(f'id="answer-{answer.pk}"')
    )
    assert "<strong>Salary negotiation: preparing your number</strong>" in page
    # The direct answer has a feed with no lines, which the page hides.
    direct = Message.objects.filter(role="assistant").order_by("-id").first()
    assert direct is not None
    assert f'<ol id="lines-{direct.pk}" class="lines"></ol>' in page


def test_history_escapes_what_users_and_the_model_wrote(alice_client, alice_conversation):
    Message.objects.create(
        conversation=alice_conversation, role="user", content="<b>bold</b> question"
    )
    Message.objects.create(
        conversation=alice_conversation,
        role="assistant",
        content="Sure <script>alert(1)</script> [x](javascript:alert(1)) **fine**",
    )
    page = alice_client.get(alice_conversation.get_absolute_url()).content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt; question" in page
    assert "<script>alert" not in page and 'href="javascript' not in page
    assert "<strong>fine</strong>" in page


def test_history_needs_the_same_number_of_queries_for_any_number_of_turns(
    alice_client, alice_conversation, knowledge_base
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for _ in range(3):
        run_turn(alice_conversation, "How do I negotiate my salary?")
        with CaptureQueriesContext(connection) as queries:
            alice_client.get(alice_conversation.get_absolute_url())
        counts.append(len(queries))
    # 13, the inbox badge included (one count over all it lists) and the sidebar's
    # conversations (one query, whatever their number).
    assert counts[0] == counts[1] == counts[2] <= 13


def test_a_recent_running_turn_still_blocks_a_second_one(alice_conversation):
    from chat.turns.admission import TurnRejected

    admit(conversation=alice_conversation, text="first")
    with pytest.raises(TurnRejected, match="still working"):
        admit(conversation=alice_conversation, text="second")
    assert Message.objects.filter(content="second").count() == 0


def test_a_flash_message_and_the_history_do_not_mix(alice_client, alice_conversation):
    Message.objects.create(conversation=alice_conversation, role="user", content="my question")
    page = alice_client.get(alice_conversation.get_absolute_url()).content.decode()
    assert page.count('<div class="bubble">my question</div>') == 1
    assert "user: my question" not in page
    assert 'class="notice' not in page.split("<main")[1].split("<section")[0]
