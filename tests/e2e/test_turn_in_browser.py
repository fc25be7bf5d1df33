from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import DONE, ask, console_errors, dismiss_dialogs
from tests.support.servers import manage

pytestmark = pytest.mark.e2e


def feed_lines(page) -> list[str]:
    """Each line's text, without the rating controls a finished answer's call line carries."""
    return page.locator("details.feed li").evaluate_all(
        """lines => lines.map(line => {
            const copy = line.cloneNode(true);
            copy.querySelectorAll("form.rating").forEach(form => form.remove());
            return copy.textContent;
        })"""
    )


def summary_after(page, question: str) -> str:
    ask(page, question)
    summary = page.locator(f"{DONE} details.feed > summary").last
    expect(summary).not_to_be_empty()
    return summary.inner_text()


def test_the_user_watches_the_feed_then_the_answer_then_the_fold(conversation):
    page = conversation
    ask(page, "How do I negotiate my salary?")

    # Live: the search line is on screen while the answer is still streaming.
    expect(page.locator("details.feed li", has_text="Found 3 documents")).to_be_visible()
    assert page.locator("article.assistant.state-streaming").count() == 1
    expect(page.locator("#question")).to_have_value("")

    expect(page.locator(DONE)).to_be_visible()
    feed = page.locator(f"{DONE} details.feed")
    expect(feed).not_to_have_attribute("open", "")
    expect(feed.locator(":scope > summary")).to_contain_text("Searched the knowledge base")
    answer = page.locator(f"{DONE} .answer")
    expect(answer.locator("strong").first).to_have_text(
        "Salary negotiation: preparing your number"
    )
    expect(page.locator("#conversation-title")).to_have_text("How do I negotiate my salary?")

    feed.locator(":scope > summary").click()
    lines_live = [" ".join(line.split()) for line in feed_lines(page)]
    steps = feed.locator("li .text").all_inner_texts()
    assert steps[1:] == ["Found 3 documents", "Writing the answer…", "Done"]
    # Each folded step says how long it took, and that it finished (✓, read out as "done").
    assert all(re.search(r" · \d+\.\d s ✓\s*done$", line) for line in lines_live), lines_live
    answer_live = answer.inner_text()

    page.reload()
    page.locator("details.feed > summary").click()
    assert [" ".join(line.split()) for line in feed_lines(page)] == lines_live
    assert page.locator(".answer").inner_text() == answer_live
    # The whole flow ran under the strict Content Security Policy without a violation.
    assert console_errors(page) == []


def test_the_search_line_appears_before_any_answer_text(conversation):
    page = conversation
    page.evaluate(
        """() => {
        window.seen = [];
        new MutationObserver(() => {
          const line = document.querySelector('details.feed li');
          const answer = document.querySelector('.answer');
          window.seen.push([!!line, answer ? answer.textContent.length : 0]);
        }).observe(document.querySelector('#messages'), {subtree: true, childList: true,
                                                         characterData: true});
      }"""
    )
    ask(page, "How do I negotiate my salary?")
    expect(page.locator(DONE)).to_be_visible()
    seen = page.evaluate("window.seen")
    first_text = next(i for i, (_, length) in enumerate(seen) if length)
    assert seen[first_text][0], "answer text appeared before any feed line"


def test_a_direct_answer_shows_no_feed_at_all(conversation):
    page = conversation
    ask(page, "Tell me a joke about penguins")
    expect(page.locator(DONE)).to_contain_text("penguins")
    expect(page.locator("details.feed")).to_be_hidden()


@pytest.mark.parametrize(
    ("question", "summary"),
    [
        ("What time is it, and how do I prepare for an interview?", "Used 2 tools"),
        # Seed 001: one tool twice is that tool, twice.
        (
            "Compare salary negotiation and interview preparation",
            "Searched the knowledge base twice",
        ),
        ("Simulate a failure while looking up salaries", "Knowledge base query failed"),
        ("What is 52,000 * 1.07 / 12?", "Did a calculation"),
        # One language per feed: the question's, on an English page.
        ("Come posso negoziare lo stipendio?", "Ha cercato nella base di conoscenza"),
    ],
)
def test_each_try_asking_prompt_folds_into_its_summary(conversation, question, summary):
    assert summary in summary_after(conversation, question)


def test_the_contact_form_the_agent_opens_can_be_sent(conversation):
    page = conversation
    assert "Opened a contact form" in summary_after(page, "I want to talk to a human advisor")
    form = page.locator(".contact-form form")
    form.locator("[name=name]").fill("Demo User")
    form.locator("[name=email]").fill("not-an-email")
    form.locator("[name=body]").fill("Please call me tomorrow.")
    form.locator("button").click()
    # The browser's own validation stops a bad email before anything is sent.
    expect(form).to_be_visible()
    form.locator("[name=email]").fill("demo@example.com")
    form.locator("button").click()
    expect(page.locator(".contact-form .sent")).to_contain_text("was sent")
    page.reload()
    expect(page.locator(".contact-form .sent")).to_be_visible()
    page.locator("details.feed > summary").click()
    expect(page.locator("details.feed li", has_text="Contact request sent")).to_be_visible()


def test_progress_mode_shows_a_draft_that_turns_into_the_answer(conversation, live_server_url):
    page = conversation
    conversation_url = page.url
    page.goto(f"{live_server_url}/preferences/")
    page.check("input[name=mode][value=progress]")
    page.check("input[name=label_kind][value=fixed]")
    page.fill("[name=label_text]", "Sifting...")
    page.click("button:text('Save')")
    expect(page.locator(".notice.success")).to_be_visible()

    page.goto(conversation_url)
    ask(page, "How do I negotiate my salary?")
    draft = page.locator("article.assistant.state-streaming details.feed li")
    expect(draft.first).to_have_text("Sifting...")
    card = page.locator("article.assistant.state-streaming")
    card_id = card.get_attribute("id")
    draft_top = card.locator("details.feed").bounding_box()["y"]
    # No answer text streams into the draft.
    assert page.locator("article.assistant.state-streaming .answer").inner_text() == ""
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator(f"{DONE} .answer strong").first).to_contain_text("Salary negotiation")
    expect(page.locator(f"{DONE} details.feed > summary")).to_contain_text("Searched")
    # The draft folds where it stood, in the same card, and the answer follows it (seed 002:
    # the feed above the result, in every mode, whatever the viewer's preference now).
    answer_in_place(page, card_id, draft_top)
    page.reload()
    answer_in_place(page, card_id)
    # The label was only the draft's: history keeps the recorded steps.
    assert "Sifting..." not in " ".join(feed_lines(page))

    page.goto(f"{live_server_url}/preferences/")
    page.click("button:text('Reset the feed settings to defaults')")


def answer_in_place(page, card_id, draft_top=None):
    card = page.locator(f"article#{card_id}.state-complete")
    if draft_top is not None:  # where the draft began, within half a line
        assert abs(card.locator("details.feed").bounding_box()["y"] - draft_top) < 8
    answer_after_feed = card.evaluate(
        "c => !!(c.querySelector('details.feed').compareDocumentPosition("
        "c.querySelector('.answer')) & Node.DOCUMENT_POSITION_FOLLOWING)"
    )
    assert answer_after_feed
    expect(card.locator("details.feed")).not_to_have_attribute("open", "")


def test_markup_in_a_question_is_shown_as_text_never_run(conversation):
    page = conversation
    dialogs = dismiss_dialogs(page)
    ask(page, "<img src=x onerror=\"alert('pwned')\"> hello")
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator("article.user")).to_contain_text("<img src=x")
    assert page.locator("#messages img").count() == 0
    assert dialogs == []


def test_logged_out_in_another_tab_the_page_says_so_and_keeps_the_question(
    conversation, live_server_url
):
    page = conversation
    other_tab = page.context.new_page()
    other_tab.goto(f"{live_server_url}/accounts/logout/")
    other_tab.click("main form button[type=submit]")
    page.fill("#question", "A question typed before noticing")
    notice = page.locator("#notice")
    expect(notice).to_contain_text("You were logged out")
    expect(notice.locator("a")).to_have_text("Log in again")
    assert "/accounts/login/?next=/c/" in notice.locator("a").get_attribute("href")
    expect(page.locator("#question")).to_have_value("A question typed before noticing")
    other_tab.close()


def test_a_refused_question_stays_in_the_box(conversation):
    page = conversation
    ask(page, "\u200b\u200b")  # only invisible characters: nothing to ask
    expect(page.locator("#notice")).to_contain_text("Type a question first.")
    expect(page.locator("#question")).to_have_value("\u200b\u200b")
    ask(page, "Tell me a joke")
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator("#question")).to_have_value("")


def test_the_answer_streams_as_markdown_and_does_not_move_when_it_is_finished(conversation):
    page = conversation
    page.evaluate(
        """() => {
          window.answerStates = [];
          new MutationObserver(() => {
            const answer = [...document.querySelectorAll('article.assistant .answer')].pop();
            if (!answer) return;
            window.answerStates.push({
              streaming: answer.classList.contains('streaming'),
              html: answer.querySelector('.blocks').innerHTML,
              tail: answer.querySelector('.tail')?.textContent ?? '',
              height: answer.getBoundingClientRect().height,
            });
          }).observe(document.querySelector('#messages'),
                     {subtree: true, childList: true, characterData: true});
        }"""
    )
    ask(page, "How do I negotiate my salary?")
    expect(page.locator(DONE)).to_be_visible()
    states = page.evaluate("window.answerStates")
    live = [state for state in states if state["streaming"]]
    # Rendered while it streams: bold and lists appear before the answer is finished.
    assert any("<strong>" in state["html"] and state["tail"] for state in live)
    assert all("**" not in state["html"] for state in live)
    last, final = live[-1], states[-1]
    assert not final["streaming"] and last["tail"] == ""
    assert last["html"] == final["html"] and last["height"] == final["height"]


def write_to_this_conversation(page, glassbox_server, code: str) -> None:
    """Runs `code` on the server's database with `c` as the page's conversation, then
    reloads the page."""
    _, env = glassbox_server
    conversation_id = page.url.rstrip("/").split("/")[-1]
    prelude = (
        "from chat.models import Conversation; "
        f"c = Conversation.objects.get(pk='{conversation_id}')\n"
    )
    manage(env, "shell", "-c", prelude + code)
    page.reload()


def test_a_turn_shows_it_is_waiting_until_its_first_line_or_text(conversation, glassbox_server):
    """A turn that has shown nothing yet (held here: its rows without a runner)."""
    page = conversation
    code = "from chat.turns.admission import admit; admit(conversation=c, text='Hello?')"
    write_to_this_conversation(page, glassbox_server, code)
    waiting = page.locator("article.state-streaming .waiting")
    expect(waiting).to_be_visible()
    expect(waiting).to_contain_text("Waiting for the agent")
    # The first feed line (or the first text) takes its place.
    page.evaluate(
        "document.querySelector('article.state-streaming .lines')"
        ".insertAdjacentHTML('beforeend', '<li class=\"line\">🔍 Searching</li>')"
    )
    expect(waiting).to_be_hidden()


AT_BOTTOM = "window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2"


def test_the_page_opens_at_the_latest_turn_and_follows_the_stream(conversation, glassbox_server):
    page = conversation
    code = (
        "from chat.models import Message; from activity.models import ActivityFeed\n"
        "for n in range(12):\n"
        "    Message.objects.create(conversation=c, role='user', content=f'Question {n}')\n"
        "    f = ActivityFeed.objects.create(owner_id=c.owner_id, conversation_id=c.pk,"
        " state='complete')\n"
        "    Message.objects.create(conversation=c, role='assistant', feed=f,"
        " content='\\n\\n'.join(f'Paragraph {p} of answer {n}.' for p in range(6)))\n"
    )
    write_to_this_conversation(page, glassbox_server, code)
    expect(page.locator("article.assistant").last).to_be_in_viewport()
    assert page.evaluate(AT_BOTTOM)
    latest = page.locator("#latest")
    expect(latest).to_be_hidden()

    page.evaluate("window.scrollTo(0, 0)")
    expect(latest).to_be_visible()
    latest.click()
    page.wait_for_function(AT_BOTTOM)
    expect(latest).to_be_hidden()

    # At the bottom, the page follows the answer as it grows.
    ask(page, "How do I negotiate my salary?")
    expect(page.locator(DONE)).to_have_count(13)
    page.wait_for_function(AT_BOTTOM)
    expect(page.locator(DONE).last).to_be_in_viewport()


def test_while_a_turn_runs_send_becomes_stop_and_a_refusal_clears_when_it_ends(conversation):
    page = conversation
    ask(page, "Compare salary negotiation and interview preparation")
    stop = page.locator("#composer .stop-turn")
    expect(stop).to_be_visible()
    expect(page.locator("#composer .send")).to_be_hidden()
    page.fill("#question", "And another thing?")
    page.press("#question", "Enter")  # refused while the agent works; the text stays
    expect(page.locator("#notice")).to_contain_text("still working")
    expect(page.locator("#question")).to_have_value("And another thing?")
    expect(page.locator(DONE)).to_be_visible()
    expect(page.locator("#notice")).to_be_empty()
    expect(page.locator("#composer .send")).to_be_visible()
    expect(stop).to_be_hidden()
    expect(page.locator("#question")).to_have_value("And another thing?")


def test_the_composers_stop_stops_the_running_turn(conversation):
    page = conversation
    ask(page, "Compare salary negotiation and interview preparation")
    page.locator("#composer .stop-turn").click()
    expect(page.locator("article.assistant.state-stopped")).to_be_visible()
    expect(page.locator("article.assistant.state-stopped .feed")).to_contain_text("Stopped")
    # An end its owner chose: nothing on the answer reads as a failure.
    expect(page.locator("article.assistant.state-stopped .line.state-failed")).to_have_count(0)


def test_copy_puts_the_answers_markdown_on_the_clipboard(conversation):
    page = conversation
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    ask(page, "How do I negotiate my salary?")
    copy = page.locator(f"{DONE} button.copy")
    copy.click()

    expect(copy).to_contain_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("Here is what the knowledge base says:")
    assert "**Salary negotiation: preparing your number**" in copied
