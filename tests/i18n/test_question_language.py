"""One language per feed: a question in a language Glassbox writes is answered, and its
feed written, in that language whatever the page's; any other question gets the page's."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client
from django.utils import translation

from activity.models import ActivityFeed, FeedPreferences
from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.live import LivePresenter
from activity.recording.events import from_json
from chat.models import Conversation, Message
from chat.turns.admission import admit, admit_again
from project.languages import written_language
from tests.support.live_ops import line_of
from tests.support.sockets import ask, frames_until_done, open_socket, turn_frames

ITALIAN_QUESTION = "Come posso prepararmi per un colloquio di lavoro?"
ITALIAN_LINES = ["Ricerca nella base di conoscenza…", "Cerco “", "Scrivo la risposta…", "Fatto"]
ENGLISH_LINES = ["Searching the knowledge base", "Found ", "Writing the answer", "Searched the"]


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Come posso negoziare il mio stipendio?", "it"),
        ("Quanto fa 52000 * 1.07?", "it"),
        ("How do I negotiate my salary?", "en"),
        ("What is 1+2?", "en"),
        # Short questions: a word or two still name their language.
        ("Stipendio?", "it"),
        ("Ciao, mi aiuti?", "it"),
        ("Scrivi una lettera di offerta", "it"),
        ("salary negotiation", "en"),
        ("我該如何進行薪資談判？", "zh-hant"),
        ("那前端轉職呢？", "zh-hant"),
        # Languages without a catalogue, and words that name none: the page's language.
        ("我该如何进行薪资谈判？", ""),
        ("給料の交渉はどうすれば？", ""),
        ("Wie verhandle ich mein Gehalt?", ""),
        ("¿Cómo negocio mi salario?", ""),
        ("Comment négocier mon salaire avec mon patron?", ""),
        ("Gehalt?", ""),
        # Words the identifier cannot place with confidence.
        ("bonus", ""),
        ("hello", ""),
        ("52000 * 1.07", ""),
    ],
)
def test_a_question_is_placed_in_a_language_glassbox_writes_or_in_none(question, language):
    assert written_language(question) == language


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_italian_question_on_an_english_page_gets_an_italian_feed_everywhere(
    alice, knowledge_base
):
    await FeedPreferences.objects.acreate(user=alice, language="en")
    conversation = await Conversation.objects.acreate(owner=alice)
    frames = await turn_frames(conversation, alice, ITALIAN_QUESTION)

    live = text_of("".join(frames[:-1]))
    folded = text_of(frames[-1])
    for italian in ITALIAN_LINES[:3]:
        assert italian in live
    assert "Ha cercato nella base di conoscenza" in folded
    assert "Ecco cosa dice la base di conoscenza" in folded  # the model's answer, in Italian
    for english in ENGLISH_LINES:
        assert english not in live + folded
    feed = await ActivityFeed.objects.aget(owner=alice)
    assert feed.language == "it"

    client = Client()
    await sync_to_async(client.force_login)(alice)
    page = (await sync_to_async(client.get)(conversation.get_absolute_url())).content.decode()
    assert '<html lang="en">' in page  # the page keeps its own language
    assert 'class="lines" lang="it"' in page  # and says which its feed speaks
    history = text_of(page)
    for italian in ITALIAN_LINES[1:]:  # the working line was replaced by the feedback
        assert italian in history
    exported = (
        await sync_to_async(client.get)(f"/c/{conversation.pk}/export.md")
    ).content.decode()
    for italian in ("Cerco “", "Ha cercato nella base di conoscenza"):
        assert italian in exported
    for english in ENGLISH_LINES:
        assert english not in history + exported


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_english_question_on_an_italian_page_gets_an_english_feed(alice, knowledge_base):
    await FeedPreferences.objects.acreate(user=alice, language="it")
    conversation = await Conversation.objects.acreate(owner=alice)
    frames = await turn_frames(conversation, alice, "How do I negotiate my salary?")
    shown = text_of("".join(frames))
    assert "Searching the knowledge base…" in shown and "Searched the knowledge base" in shown
    assert "Ricerca nella base" not in shown and "Ha cercato" not in shown
    assert "⏹ Ferma" in shown  # the page's own controls stay Italian


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_question_in_a_language_without_a_catalogue_gets_the_pages(alice, knowledge_base):
    await FeedPreferences.objects.acreate(user=alice, language="it")
    conversation = await Conversation.objects.acreate(owner=alice)
    await turn_frames(conversation, alice, "Wie verhandle ich mein Gehalt?")
    assert await ActivityFeed.objects.filter(owner=alice, language="it").aexists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_live_drafts_label_speaks_the_feeds_language_on_every_tab(alice, knowledge_base):
    """The draft's label is written by each socket, not recorded: the asker's tab and another
    tab watching both write it in the feed's language, not their page's."""
    await FeedPreferences.objects.acreate(
        user=alice, language="en", overrides={"MODE": "progress", "SHOW_AFTER": 0}
    )
    conversation = await Conversation.objects.acreate(owner=alice)
    asker = await open_socket(conversation, alice)
    watcher = await open_socket(conversation, alice)
    await ask(asker, ITALIAN_QUESTION)
    shown = [await frames_until_done(asker), await frames_until_done(watcher)]
    await asker.disconnect()
    await watcher.disconnect()
    answer = await Message.objects.aget(role=Message.Role.ASSISTANT)
    prefs = FeedPrefs(mode="progress", label="auto")
    with translation.override("it"):
        italian = prefs.label_for(answer.pk)
    with translation.override("en"):
        english = prefs.label_for(answer.pk)
    assert italian != english
    for frames in shown:
        assert italian in "".join(frames)
        assert english not in "".join(frames)


def test_a_presenter_writes_its_own_lines_in_the_feeds_language_not_the_pages():
    waiting = {"type": "status", "seq": 3, "icon": "⏸", "message": "Invia — in attesa",
               "state": "waiting", "tool": "send_email", "call_id": "c1"}  # fmt: skip
    decision = {"type": "decision", "seq": 4, "call_id": "c1", "tool": "send_email",
                "decision": "approve", "by": "alice"}  # fmt: skip
    prefs = FeedPrefs(mode="progress", label="auto")  # the default pool, translated
    with translation.override("en"):
        presenter = LivePresenter(prefs, 0, language="it")
        label, shown_waiting = (line_of(op) for op in presenter.on_event(from_json(waiting)))
        (approved,) = presenter.on_event(from_json(decision))
        english = line_of(LivePresenter(prefs, 0).on_event(from_json(waiting))[0])
    with translation.override("it"):
        italian_label = prefs.label_for(0)
    assert (label.message, english.message) == (italian_label, "Thinking...")
    assert italian_label != "Thinking..."
    assert shown_waiting.message == "Invia — in attesa"
    assert line_of(approved).message == "Approvato da alice"


@pytest.mark.django_db
def test_a_regenerated_answer_speaks_its_questions_language_too(alice):
    conversation = Conversation.objects.create(owner=alice)
    first = admit(conversation=conversation, text=ITALIAN_QUESTION, language="en")
    assert first.answer.answer_feed.language == "it"
    Message.objects.filter(pk=first.answer.pk).update(state=Message.State.COMPLETE)
    again = admit_again(conversation=conversation, answer_id=first.answer.pk, language="en")
    assert again.answer.answer_feed.language == "it"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_decision_in_an_italian_feed_reads_in_italian_on_an_english_page(alice):
    from chat.models import ToolApproval
    from chat.turns.registry import finish_all

    await FeedPreferences.objects.acreate(user=alice, language="en")
    conversation = await Conversation.objects.acreate(owner=alice)
    client = AsyncClient(enforce_csrf_checks=False)
    await client.aforce_login(alice)
    act = f"/c/{conversation.pk}/act/"
    await client.post(
        act, {"message": "Scrivi una email a advisor@example.com: possiamo vederci?"}
    )
    await finish_all()  # the turn waits for the owner's decision
    await client.post(act, {"approve": (await ToolApproval.objects.aget()).call_id})
    await finish_all()

    page = text_of((await client.get(conversation.get_absolute_url())).content.decode())
    assert "Approvato da alice" in page and "Approved by" not in page
    assert "Send" in page  # the page's own words stay English


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_folded_feed_speaks_its_language_units_and_numbers_too(alice, knowledge_base):
    """An Italian feed on a Traditional-Chinese page folds as "Ha cercato … · 4 passaggi ·
    1,7 s", not "搜尋了知識庫 · 4 passaggi" nor "… · 4 個步驟 · 1.7 s"."""
    await FeedPreferences.objects.acreate(user=alice, language="zh-hant")
    conversation = await Conversation.objects.acreate(owner=alice)
    await turn_frames(conversation, alice, "Stipendio?")
    feed = await ActivityFeed.objects.aget(owner=alice)
    assert feed.language == "it"
    await ActivityFeed.objects.filter(pk=feed.pk).aupdate(
        finished_at=feed.started_at + timedelta(milliseconds=1700)
    )

    client = Client()
    await sync_to_async(client.force_login)(alice)
    page = (await sync_to_async(client.get)(conversation.get_absolute_url())).content.decode()
    assert '<html lang="zh-hant">' in page
    summary = re.search(r'<summary lang="it">(.*?)</summary>', page, re.S)
    assert summary, "the fold does not say it is Italian"
    folded = " ".join(text_of(summary.group(1)).split())
    assert "Ha cercato nella base di conoscenza" in folded
    assert re.search(r"· \d+ passaggi? · 1,7 s", folded), folded
    assert "步驟" not in folded and "搜尋" not in folded


def test_the_model_is_told_to_write_its_feedback_in_the_feeds_language_always():
    """The feed's own lines speak one language: the model's feedback lines must too, even
    when it answers a question written in a language the feed does not speak."""
    from chat.agent.loop import system_prompt

    told = system_prompt("it")
    assert "every feedback_to_user in Italian" in told
    assert "unless" not in told.split("feedback_to_user in Italian")[1].split(".")[0]
