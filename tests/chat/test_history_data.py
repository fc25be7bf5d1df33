"""bench/history_data.py's history reads as one that real turns wrote: verify_audit finds
every generated feed intact and sealed, the ledger whole, and the pages show it."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from activity.auditing.audit import ledger_problems, period, verify
from activity.models import ActivityEvent
from chat.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)

# Run from its file as the bench runs it (bench/ is scripts, not a package).
HISTORY_DATA = runpy.run_path(str(Path(__file__).parents[2] / "bench" / "history_data.py"))
USER, generate = HISTORY_DATA["USER"], HISTORY_DATA["generate"]


def test_a_generated_history_is_sealed_and_audits_intact(knowledge_base):
    said = generate(conversations=6, events=150, days=30, seed=1)
    assert "6 of history" in said
    owner = User.objects.get(username=USER)
    assert Conversation.objects.filter(owner=owner).count() == 6
    assert ActivityEvent.objects.count() >= 150
    checked = list(verify(period(None, None)))
    assert checked and all(feed.intact and feed.sealed for feed in checked)
    assert list(ledger_problems()) == []
    # A second run leaves the history as it is.
    assert "already" in generate(conversations=6, events=150, days=30, seed=1)


def test_a_generated_history_lists_and_searches_like_any(client, knowledge_base):
    generate(conversations=3, events=40, days=3, seed=2)
    client.force_login(User.objects.get(username=USER))
    assert client.get("/").content.decode().count('class="conversation-row"') == 3
    assert client.get("/?q=salary").content.decode().count('class="conversation-row"') >= 1
