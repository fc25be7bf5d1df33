from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import start_new
from tests.support.servers import manage

pytestmark = pytest.mark.e2e

LONG_CONVERSATION = """
import json
from activity.models import ActivityEvent, ActivityFeed
from chat.models import Conversation, Message
from django.contrib.auth.models import User
demo = User.objects.get(username="demo")
c = Conversation.objects.create(owner=demo, title="Long talk")
ids = []
for n in range(25):
    Message.objects.create(conversation=c, role="user", content=f"question {n}")
    feed = ActivityFeed.objects.create(owner=demo, conversation_id=c.pk, state="complete",
                                       summary_icon="📄", summary_text="Searched")
    ActivityEvent.objects.create(feed=feed, seq=1, kind="status", icon="📄",
                                 message=f"Found {n} documents", state="done")
    ids.append(Message.objects.create(conversation=c, role="assistant", content=f"answer {n}",
                                      feed=feed).pk)
print(json.dumps({"id": str(c.pk), "answers": ids}))
"""


@pytest.fixture
def logged_in(page, glassbox_server):
    url, _ = glassbox_server
    page.goto(f"{url}/accounts/login/")
    page.fill("[name=username]", "demo")
    page.fill("[name=password]", "demo")
    page.click("main form button[type=submit]")
    expect(page).to_have_url(f"{url}/")
    return page


def test_a_deep_link_opens_an_old_turn_with_its_feed_expanded(logged_in, glassbox_server):
    url, env = glassbox_server
    made = json.loads(manage(env, "shell", "-c", LONG_CONVERSATION).strip().splitlines()[-1])
    page = logged_in
    old = made["answers"][1]
    page.goto(f"{url}/c/{made['id']}/#m-{old}")
    expect(page).to_have_url(re.compile(rf"\?from={old}#m-{old}$"))
    expect(page.locator(f"#m-{old}")).to_have_class(re.compile("linked"))
    expect(page.locator(f"#feed-{old}")).to_have_attribute("open", "")
    expect(page.locator(f"#feed-{old} li")).to_contain_text("Found 1 documents")

    # The latest turns first; earlier ones load in place, without a new page.
    page.goto(f"{url}/c/{made['id']}/")
    expect(page.locator("#messages")).to_contain_text("question 24")
    assert page.locator("#messages", has_text="question 4 ").count() == 0
    page.evaluate("window.stillHere = true")
    page.click("text=Load earlier turns")
    expect(page.locator("#messages")).to_contain_text("question 0")
    assert page.evaluate("window.stillHere") is True
    assert page.locator("text=Load earlier turns").count() == 0


def test_search_rename_and_delete_from_the_page(logged_in, glassbox_server):
    url, env = glassbox_server
    made = json.loads(manage(env, "shell", "-c", LONG_CONVERSATION).strip().splitlines()[-1])
    page = logged_in
    page.goto(f"{url}/c/{made['id']}/")
    page.click("details.conversation-tools > summary")
    page.click("text=Rename")
    page.fill("[name=title]", "Salary talk <2026>")
    page.click(".rename button")
    expect(page.locator("#conversation-title")).to_have_text("Salary talk <2026>")
    page.goto(f"{url}/?q=question+17")
    expect(page.locator(".conversation-row").first).to_contain_text("Salary talk <2026>")
    page.goto(f"{url}/c/{made['id']}/delete/")
    page.click("button:text('Delete')")
    expect(page.locator(".notice.success")).to_contain_text("was deleted")
    page.goto(f"{url}/?q=question+17")
    assert page.locator(".conversation-row", has_text="Salary talk").count() == 0


OPENED = (
    "from activity.models import ActivityFeed; "
    "print(ActivityFeed.objects.get(message__pk={answer}).opened_count)"
)


# The page's socket, kept where a test can send on it.
KEEP_SOCKET = """document.addEventListener("htmx:wsOpen", (event) => {
  window.testSocket = event.detail.socketWrapper;
});"""


def test_an_unfolded_feed_stays_open_when_its_answer_is_drawn_again(logged_in, glassbox_server):
    """A socket that joins a turn draws its answer whole, and can do so after the answer ended
    (a reconnect's request for the answers the page showed as running): what the reader
    unfolded stays unfolded."""
    page = logged_in
    page.add_init_script(KEEP_SOCKET)
    start_new(page)
    page.fill("#question", "How do I prepare for an interview?")
    page.click("#composer button.send")
    done = page.locator("article.assistant.state-complete")
    expect(done).to_be_visible()
    answer = int(done.get_attribute("id").removeprefix("m-"))
    done.locator("details.feed > summary").click()
    expect(done.locator("details.feed li").first).to_be_visible()
    page.evaluate(
        "(id) => { document.getElementById(id).dataset.drawnBefore = '1'; }", f"m-{answer}"
    )
    page.evaluate("(answer) => window.testSocket.send(JSON.stringify({resume: [answer]}))", answer)
    # Drawn again: the article is a new element, without the mark.
    expect(page.locator(f"#m-{answer}:not([data-drawn-before])")).to_be_attached()
    expect(done.locator("details.feed li").first).to_be_visible()
    assert page.locator(f"#feed-{answer}").get_attribute("data-count") is None


def test_expanding_a_folded_feed_is_counted_once_per_page(logged_in, glassbox_server):
    _, env = glassbox_server
    page = logged_in
    start_new(page)
    page.fill("#question", "How do I prepare for an interview?")
    page.click("#composer button.send")
    done = page.locator("article.assistant.state-complete")
    expect(done).to_be_visible()
    answer = done.get_attribute("id").removeprefix("m-")

    # The folded feed the turn just became is the one the reader expands.
    with page.expect_response(lambda r: r.url.endswith("/expanded/")) as reported:
        done.locator("details.feed > summary").click()
    assert reported.value.status == 204
    done.locator("details.feed > summary").click()  # closed
    done.locator("details.feed > summary").click()  # opened again: the same page view
    page.reload()
    with page.expect_response(lambda r: r.url.endswith("/expanded/")):
        page.locator(f"#feed-{answer} > summary").click()
    assert manage(env, "shell", "-c", OPENED.format(answer=answer)).split()[-1] == "2"
