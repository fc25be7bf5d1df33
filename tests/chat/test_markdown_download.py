"""The Markdown download keeps only the link targets the page keeps (none, or http, https and
mailto), whatever form a link takes and wherever it stands; opened with markdown-it's own
renderer, link validation off, it holds no script link."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt

from activity.models import ActivityEvent, ActivityFeed
from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db

# Each target hides a script (or data, or vbscript) link in another form.
ANSWER = "\n".join([
    "[inline](javascript:alert(1)) [cased](JaVaScRiPt:alert(2)) [tab](java&#x09;script:alert(3))",
    "[named](javascript&colon;alert(4)) [numbered](javascript&#58;alert(5))",
    "[escaped](javascript\\:alert(6)) [spaced](   javascript:alert(7))",
    "[angled](<javascript:alert(8)>) [titled](javascript:alert(9) \"a title\")",
    "[data](data:text/html;charset=utf-8,alert(10)) [vb](VBScript:alert(11))",
    "[broken over lines](",
    "javascript:alert(12)) and <javascript:alert(13)> and <JAVASCRIPT:alert(14)>",
    "`` [in what looks like code](javascript:alert(15)) ``` and"
    " \\`[after an escaped backtick](javascript:alert(16))`",
    "[image] ![pic](javascript:alert(17)) [line feed](java&#x0A;script:alert(18))",
    "[escaped before\\](javascript:alert(26)) [escaped twice\\\\](javascript:alert(27))",
    "",
    "[by reference][evil], [shortcut] and [Collapsed][].",
    "",
    "[evil]: javascript:alert(19)",
    "[shortcut]:",
    "  vbscript:alert(20)",
    "[collapsed]: <data:text/html,alert(21)>",
    "",
    "| tool | link |",
    "| --- | --- |",
    "| search | [cell](javascript:alert(22)) |",
    "",
    "Kept: [page](https://example.com/kept), [mail](mailto:someone@example.com),"
    " <https://example.com/auto>, <someone@example.com> and [here](/c/relative/).",
])  # fmt: skip
QUESTION = "Is [this](javascript:alert(23)) safe?"
KEPT = {
    "https://example.com/kept",
    "mailto:someone@example.com",
    "https://example.com/auto",
    "/c/relative/",
}


class Targets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.found += [value or "" for name, value in attrs if name in ("href", "src")]


def rendered_targets(markdown: str) -> list[str]:
    """What a viewer links to: markdown-it's own renderer, raw HTML on, link validation off."""
    md = MarkdownIt("commonmark").enable("table")
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    parser = Targets()
    parser.feed(md.render(markdown))
    return parser.found


def scheme(target: str) -> str:
    """The scheme a browser would read, after the tricks of entities, escapes and spaces."""
    seen = re.sub(r"[\x00-\x20\x7f]", "", unquote(unescape(target))).lower()
    found = re.match(r"([a-z][a-z0-9+.\-]*):", seen)
    return found.group(1) if found else ""


def downloaded(client, conversation) -> str:
    response = client.get(f"/c/{conversation.pk}/export.md")
    assert response.status_code == 200
    return response.content.decode()


def conversation_of(owner, question: str, answer: str, title: str = "") -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title)
    Message.objects.create(conversation=conversation, role="user", content=question)
    feed = ActivityFeed.objects.create(owner=owner, conversation_id=conversation.pk,
                                       state="complete")  # fmt: skip
    Message.objects.create(conversation=conversation, role="assistant", content=answer, feed=feed)
    return conversation


def test_no_link_in_the_download_leads_anywhere_the_page_would_not(alice_client, alice):
    conversation = conversation_of(alice, QUESTION, ANSWER)
    feed = ActivityFeed.objects.get()
    ActivityEvent.objects.create(
        feed=feed, seq=1, kind="status", icon="🔍", state="done", call_id="c1",
        message="Looking up [a line](javascript:alert(24))\n\n[x]: javascript:alert(25)",
    )  # fmt: skip
    text = downloaded(alice_client, conversation)

    targets = rendered_targets(text)
    assert {scheme(target) for target in targets} <= {"", "http", "https", "mailto"}
    assert not [t for t in targets if re.search(r"script|data", unquote(unescape(t)), re.I)]
    assert set(targets) >= KEPT
    # The words stay, as the page shows them; only the links are gone.
    for number in range(1, 28):
        assert f"alert({number})" in text


def test_a_title_with_a_script_link_links_nowhere_in_the_download(alice_client, alice):
    conversation = conversation_of(
        alice, "q", "a", title="[title](javascript:alert(1)) and <javascript:alert(2)>"
    )
    text = downloaded(alice_client, conversation)
    assert text.startswith("# ") and "alert(2)" in text.splitlines()[0]
    assert rendered_targets(text) == []


def test_an_answer_the_line_pass_cannot_read_is_written_as_plain_text(alice_client, alice):
    """A target that runs on into a code span is one link for a viewer and two pieces for
    the pass over the text: the parse that checks the result finds it, and that answer
    becomes plain text while the others keep their links."""
    tricky = "[a](j`x`:alert(1)) and [page](https://example.com/kept)"
    conversation = conversation_of(alice, "First", tricky)
    Message.objects.create(conversation=conversation, role="user", content="Second")
    Message.objects.create(
        conversation=conversation, role="assistant", content="[other](https://example.com/o)",
        feed=ActivityFeed.objects.create(owner=alice, conversation_id=conversation.pk),
    )  # fmt: skip
    text = downloaded(alice_client, conversation)
    targets = rendered_targets(text)
    assert targets == ["https://example.com/o"]
    assert "\\[a\\]\\(j\\`x\\`\\:alert\\(1\\)\\)" in text


def test_a_gap_in_the_pass_still_leaves_no_script_link(alice_client, alice, monkeypatch):
    """The last check reads the whole document: were the pass over the text to miss a trick
    altogether, every question and answer would be written as plain text."""
    for missing_everything in ("inert", "_inert_or_plain"):
        monkeypatch.setattr(f"chat.conversations.exports.{missing_everything}", lambda text: text)
    conversation = conversation_of(alice, QUESTION, ANSWER)
    text = downloaded(alice_client, conversation)
    assert {scheme(target) for target in rendered_targets(text)} <= {""}
    assert "alert\\(1\\)" in text
