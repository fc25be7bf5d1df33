"""RENDER rich: a feed line laid out as fields on the page, the same text everywhere else."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.utils.html import strip_tags

from activity.models import FeedPreferences
from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.live import LivePresenter
from activity.presenting.presentation import line_for
from activity.recording.events import Status, from_json
from chat.models import Conversation
from chat.socket import render
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = "Read: <img src=x onerror=alert(1)>"


def shown(line) -> str:
    return render_to_string("activity/_line.html", {"line": line, "answer_id": 7, "live": False})


def test_a_rich_line_shows_its_fields_and_reads_as_the_plain_one():
    status = Status(icon="🔍", message="Searched the knowledge base for “pay”", state="done")
    plain = line_for(status, detail="query: pay, limit: 3")
    rich = shown(plain.__class__(**{**_as_dict(plain), "rich": True, "duration_ms": 1200}))

    assert '<span class="action">Searched the knowledge base for</span>' in rich
    assert ' <span class="subject">“pay”</span>' in rich
    assert ', <span class="detail">query: pay, limit: 3</span>' in rich
    assert 'class="line state-done rich"' in rich
    text = re.search(r'<span class="text">(.*?)</span> <span class="duration">', rich)
    assert text and strip_tags(text.group(1)) == plain.message


def test_markup_the_model_wrote_stays_inert_text_in_every_field():
    status = Status(icon="📄", message=HOSTILE, state="in_progress")
    line = line_for(status, detail="path: <script>alert(2)</script>")
    html = shown(line.__class__(**{**_as_dict(line), "rich": True}))
    assert "<img" not in html and "<script" not in html
    assert '<span class="subject">&lt;img src=x onerror=alert(1)&gt;</span>' in html
    assert '<span class="detail">path: &lt;script&gt;alert(2)&lt;/script&gt;</span>' in html


def test_a_rich_readers_live_lines_are_fields_as_they_arrive():
    presenter = LivePresenter(FeedPrefs(render="rich"), 7)
    event = {"type": "status", "seq": 1, "icon": "🔍", "message": "Looking up “pay” now",
             "state": "in_progress", "tool": "search_documents", "call_id": "c1"}  # fmt: skip
    html = render.live_ops(7, presenter.on_event(from_json(event)))
    assert '<span class="action">Looking up</span> <span class="subject">“pay” now</span>' in html
    plain = render.live_ops(7, LivePresenter(FeedPrefs(), 7).on_event(from_json(event)))
    assert '<span class="text">Looking up “pay” now</span>' in plain


def test_a_reader_who_chose_rich_sees_fields_and_the_markdown_download_is_unchanged(
    alice_client, alice, knowledge_base
):
    conversation = Conversation.objects.create(owner=alice)
    run_turn(conversation, "How do I negotiate my salary?")
    plain_page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    plain_markdown = alice_client.get(f"/c/{conversation.pk}/export.md").content

    FeedPreferences.objects.create(user=alice, overrides={"RENDER": "rich"})
    rich_page = alice_client.get(f"/c/{conversation.pk}/").content.decode()

    assert 'class="action"' not in plain_page
    assert '<span class="action">Looking up</span> <span class="subject">“negotiate' in rich_page
    assert alice_client.get(f"/c/{conversation.pk}/export.md").content == plain_markdown


def _as_dict(line) -> dict:
    return {name: getattr(line, name) for name in line.__slots__}
