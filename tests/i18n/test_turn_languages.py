"""A whole turn in each language: the live lines, the folded summary and the history page."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from activity.models import ActivityFeed, FeedPreferences
from chat.models import Conversation
from tests.support.matching import found
from tests.support.sockets import ask, finish_turns, frames_until_done, open_socket, turn_frames

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@dataclass(frozen=True)
class Language:
    code: str
    question: str
    working: str
    feedback: str
    found: str
    writing: str
    done: str
    summary: str
    answer: str
    page: str
    duration: str
    html_lang: str


ITALIAN = Language(
    code="it",
    question="Come posso negoziare il mio stipendio?",
    working="Ricerca nella base di conoscenza…",
    feedback="Cerco “",
    found=r"Trovat[oi] \d+ document[oi]",
    writing="Scrivo la risposta…",
    done="Fatto",
    summary="Ha cercato nella base di conoscenza",
    answer="Ecco cosa dice la base di conoscenza",
    page="Invio invia, Maiusc+Invio va a capo, Esc ferma la risposta.",
    duration=r"· \d+,\d s",
    html_lang='<html lang="it">',
)
CHINESE = Language(
    code="zh-hant",
    question="我該如何進行薪資談判？",
    working="正在搜尋知識庫…",
    feedback="正在知識庫中查詢「",
    found=r"找到 \d+ 份文件",
    writing="正在撰寫回答…",
    done="完成",
    summary="搜尋了知識庫",
    answer="以下是知識庫中的相關內容",
    page="Enter 送出，Shift+Enter 換行，Esc 停止回答。",
    duration=r"· \d+\.\d 秒",
    html_lang='<html lang="zh-hant">',
)
ENGLISH_LINES = ["Searching the knowledge base", "Found ", "Writing the answer", "Searched the"]


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


@pytest.mark.parametrize("language", [ITALIAN, CHINESE], ids=lambda lang: lang.code)
async def test_a_turn_speaks_the_saved_language_live_and_in_history(
    alice, knowledge_base, language
):
    await FeedPreferences.objects.acreate(user=alice, language=language.code)
    conversation = await Conversation.objects.acreate(owner=alice)
    frames = await turn_frames(conversation, alice, language.question)

    live = text_of("".join(frames[:-1]))
    for expected in (language.working, language.feedback, language.writing):
        assert expected in live
    assert re.search(language.found, live)
    assert "⏹ " + {"it": "Ferma", "zh-hant": "停止"}[language.code] in live
    folded = text_of(frames[-1])
    assert language.summary in folded and language.answer in folded
    for english in ENGLISH_LINES:
        assert english not in live + folded

    client = Client()
    await sync_to_async(client.force_login)(alice)
    page = (await sync_to_async(client.get)(conversation.get_absolute_url())).content.decode()
    assert language.html_lang in page
    shown = text_of(page)
    for expected in (language.page, language.feedback, language.summary, language.done):
        assert expected in shown
    assert re.search(language.found, shown)
    assert re.search(language.duration, shown)
    for english in ENGLISH_LINES:
        assert english not in shown
    feed = await ActivityFeed.objects.aget(owner=alice)
    assert (feed.language, feed.summary_text) == (language.code, language.summary)


async def browser_socket(conversation, user, accept_language: str, query: str = ""):
    headers = [(b"accept-language", accept_language.encode())]
    return await open_socket(conversation, user, headers=headers, query=query)


async def test_the_socket_speaks_the_language_of_the_page_whatever_its_handshake_says(
    alice, knowledge_base
):
    """A zh-TW page whose browser sent English (or nothing) on the socket's handshake: the
    lines and the folded summary are Chinese, as the page is."""
    conversation = await Conversation.objects.acreate(owner=alice)
    client = Client(headers={"accept-language": "zh-TW,zh;q=0.9"})
    await sync_to_async(client.force_login)(alice)
    page = (await sync_to_async(client.get)(conversation.get_absolute_url())).content.decode()
    query = found(r'ws-connect="/ws/c/[0-9a-f-]+/\?([^"]+)"', page)
    assert query == "lang=zh-hant"

    socket = await browser_socket(conversation, alice, "en-US,en;q=0.9", query=query)
    await ask(socket, "bonus")
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    shown = text_of("".join(frames))
    assert CHINESE.working in shown and CHINESE.summary in shown
    for english in ENGLISH_LINES:
        assert english not in shown


async def test_a_language_the_page_names_but_glassbox_does_not_speak_is_ignored(
    alice, knowledge_base
):
    conversation = await Conversation.objects.acreate(owner=alice)
    socket = await browser_socket(conversation, alice, "it", query="lang=xx-nowhere")
    await ask(socket, "")
    notice = await socket.receive_from(timeout=5)
    await socket.disconnect()
    assert "Scrivi prima una domanda." in notice


async def test_without_a_saved_language_the_browsers_is_used_and_the_model_is_told_it(
    alice, knowledge_base
):
    conversation = await Conversation.objects.acreate(owner=alice)
    socket = await browser_socket(conversation, alice, "zh-TW,zh;q=0.9,en;q=0.5")
    # Words the demo model cannot place in any language: it answers in the one it was told.
    await ask(socket, "bonus")
    frames = await frames_until_done(socket)
    await finish_turns()
    await socket.disconnect()
    shown = text_of("".join(frames))
    assert CHINESE.working in shown and CHINESE.feedback in shown
    assert CHINESE.summary in shown and CHINESE.answer in shown


async def test_a_saved_language_wins_over_the_browsers(alice, knowledge_base):
    await FeedPreferences.objects.acreate(user=alice, language="it")
    conversation = await Conversation.objects.acreate(owner=alice)
    socket = await browser_socket(conversation, alice, "zh-TW")
    await ask(socket, "")
    notice = await socket.receive_from(timeout=5)
    await socket.disconnect()
    assert "Scrivi prima una domanda." in notice


async def test_numbers_in_the_feed_follow_the_language(alice, knowledge_base):
    await FeedPreferences.objects.acreate(user=alice, language="it")
    conversation = await Conversation.objects.acreate(owner=alice)
    frames = await turn_frames(conversation, alice, "Quanto fa 52000 * 1.07?")
    shown = text_of("".join(frames))
    assert "Calcolato 52000 * 1.07 = 55.640" in shown
    assert "Ha fatto un calcolo" in shown


async def test_the_seeds_own_conversation_searches_the_knowledge_base_twice(alice, knowledge_base):
    """Seed 002's dialogue, as its user typed it: both questions search and find documents,
    and each answer keeps its folded feed."""
    await FeedPreferences.objects.acreate(user=alice, language="zh-hant")
    conversation = await Conversation.objects.acreate(owner=alice)
    dialogue = [("怎麼談薪水？", "談薪水的時機與說法"), ("那前端轉職呢？", "轉職前端工程師")]
    for question, title in dialogue:
        events = await turn_frames(conversation, alice, question, as_json=True)
        lines = [e for e in events if e["type"] == "status"]
        assert lines[0]["icon"] == "🔍" and lines[0]["message"] == CHINESE.working
        assert any(e["icon"] == "📄" and re.search(CHINESE.found, e["message"]) for e in lines)
        answer = "".join(e["content"] for e in events if e["type"] == "text")
        assert CHINESE.answer in answer and title in answer
        assert events[-1]["summary"] == {"icon": "📄", "text": CHINESE.summary}
    assert await ActivityFeed.objects.filter(owner=alice, tool_call_count=1).acount() == 2
