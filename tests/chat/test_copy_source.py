"""Copy gives an answer's Markdown as the model wrote it, to its owner only."""

from __future__ import annotations

import pytest

from chat.models import Message
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_owner_gets_the_answers_markdown(alice_client, alice_conversation, knowledge_base):
    answer = run_turn(alice_conversation, "How do I negotiate my salary?")
    url = f"/c/{alice_conversation.pk}/m/{answer.pk}/source.md"

    response = alice_client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response.content.decode() == answer.content
    assert "**Salary negotiation: preparing your number**" in answer.content
    page = alice_client.get(f"/c/{alice_conversation.pk}/").content.decode()
    assert f'data-source="{url}"' in page


def test_no_one_else_and_no_question_has_a_source(
    client, bob, alice_client, alice_conversation, knowledge_base
):
    answer = run_turn(alice_conversation, "How do I negotiate my salary?")
    question = Message.objects.get(role="user")
    base = f"/c/{alice_conversation.pk}/m"

    assert alice_client.get(f"{base}/{question.pk}/source.md").status_code == 404
    client.force_login(bob)
    assert client.get(f"{base}/{answer.pk}/source.md").status_code == 404
