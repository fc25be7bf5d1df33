from __future__ import annotations

import re

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = pytest.mark.e2e


def wait(browser, condition, seconds: float = 20):
    # htmx replaces whole elements by id, so a found element may be swapped out under us.
    return WebDriverWait(
        browser, seconds, poll_frequency=0.02, ignored_exceptions=[StaleElementReferenceException]
    ).until(condition)


@pytest.fixture
def conversation_page(browser, live_server_url):
    browser.delete_all_cookies()
    browser.get(f"{live_server_url}/accounts/login/")
    browser.find_element(By.NAME, "username").send_keys("demo")
    browser.find_element(By.NAME, "password").send_keys("demo")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait(browser, lambda b: b.current_url == f"{live_server_url}/")
    browser.find_element(By.XPATH, "//main//button[text()='New conversation']").click()
    wait(browser, lambda b: "/c/" in b.current_url)
    # The socket is open once htmx has connected; sending earlier would be queued anyway.
    return browser


def ask(browser, question: str) -> None:
    browser.find_element(By.ID, "question").send_keys(question)
    browser.find_element(By.CSS_SELECTOR, "#composer button").click()


def feed_lines(browser) -> list[str]:
    return [li.text for li in browser.find_elements(By.CSS_SELECTOR, "details.feed li")]


def test_the_user_watches_the_feed_then_the_answer_then_the_fold(conversation_page):
    browser = conversation_page
    ask(browser, "How do I negotiate my salary?")

    # Live: the search line is on screen while the answer is still streaming.
    wait(browser, lambda b: any("Found 3 documents" in line for line in feed_lines(b)))
    assert browser.find_elements(By.CSS_SELECTOR, "article.assistant.state-streaming")
    assert browser.find_element(By.CSS_SELECTOR, "details.feed").get_attribute("open")
    assert browser.find_element(By.ID, "question").get_attribute("value") == ""

    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "article.assistant.state-complete"))
    feed = browser.find_element(By.CSS_SELECTOR, "details.feed")
    assert not feed.get_attribute("open")
    assert "Searched the knowledge base" in feed.find_element(By.TAG_NAME, "summary").text
    answer = browser.find_element(By.CSS_SELECTOR, "article.assistant .answer")
    assert "Salary negotiation: preparing your number" in answer.text
    assert answer.find_element(By.TAG_NAME, "strong").text.startswith("Salary negotiation")
    assert (
        "How do I negotiate my salary?" in browser.find_element(By.ID, "conversation-title").text
    )

    feed.find_element(By.TAG_NAME, "summary").click()
    lines_live = feed_lines(browser)
    steps = [line.split(" ", 1)[1].split(" · ")[0] for line in lines_live]
    assert steps[1:] == ["Found 3 documents", "Writing the answer…", "Done"]
    # Each folded step says how long it took, and that it finished.
    assert all(re.search(r" · \d+\.\d s ✓$", line) for line in lines_live)
    answer_live = answer.text

    browser.refresh()
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "details.feed"))
    browser.find_element(By.CSS_SELECTOR, "details.feed summary").click()
    assert feed_lines(browser) == lines_live
    assert browser.find_element(By.CSS_SELECTOR, "article.assistant .answer").text == answer_live


def test_a_direct_answer_shows_no_feed_at_all(conversation_page):
    browser = conversation_page
    ask(browser, "Tell me a joke about penguins")
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "article.assistant.state-complete"))
    assert "penguins" in browser.find_element(By.CSS_SELECTOR, "article.assistant").text
    assert not browser.find_element(By.CSS_SELECTOR, "details.feed").is_displayed()


def test_markup_in_a_question_is_shown_as_text_never_run(conversation_page):
    browser = conversation_page
    ask(browser, "<img src=x onerror=\"document.title='pwned'\"> hello")
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "article.assistant.state-complete"))
    assert browser.title != "pwned"
    assert "<img src=x" in browser.find_element(By.CSS_SELECTOR, "article.user").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#messages img")


def summary_after(browser, question: str) -> str:
    ask(browser, question)
    done = "article.assistant.state-complete details.feed summary"
    return wait(browser, lambda b: [e.text for e in b.find_elements(By.CSS_SELECTOR, done)])[-1]


@pytest.mark.parametrize(
    ("question", "summary"),
    [
        ("What time is it, and how do I prepare for an interview?", "Used 2 tools"),
        ("Compare salary negotiation and interview preparation", "Used 2 tools"),
        ("Simulate a failure while looking up salaries", "Knowledge base query failed"),
        ("What is 52,000 * 1.07 / 12?", "Did a calculation"),
        ("Come posso negoziare lo stipendio?", "Searched the knowledge base"),
    ],
)
def test_each_try_asking_prompt_folds_into_its_summary(conversation_page, question, summary):
    assert summary in summary_after(conversation_page, question)


def test_the_contact_form_the_agent_opens_can_be_sent(conversation_page):
    browser = conversation_page
    assert "Opened a contact form" in summary_after(browser, "I want to talk to a human advisor")
    field = "#messages .contact-form [name={}]".format
    browser.find_element(By.CSS_SELECTOR, field("name")).send_keys("Demo User")
    browser.find_element(By.CSS_SELECTOR, field("email")).send_keys("not-an-email")
    browser.find_element(By.CSS_SELECTOR, field("body")).send_keys("Please call me tomorrow.")
    browser.find_element(By.CSS_SELECTOR, ".contact-form button").click()
    # The browser's own validation stops a bad email before anything is sent.
    assert browser.find_elements(By.CSS_SELECTOR, ".contact-form form")
    browser.find_element(By.CSS_SELECTOR, field("email")).clear()
    browser.find_element(By.CSS_SELECTOR, field("email")).send_keys("demo@example.com")
    browser.find_element(By.CSS_SELECTOR, ".contact-form button").click()
    wait(browser, lambda b: "was sent" in b.find_element(By.CSS_SELECTOR, ".contact-form").text)
    browser.refresh()
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, ".contact-form .sent"))
    browser.find_element(By.CSS_SELECTOR, "details.feed summary").click()
    assert any("Contact request sent" in line for line in feed_lines(browser))
