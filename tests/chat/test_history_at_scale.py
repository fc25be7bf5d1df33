"""A long history stays as cheap to list, page, search and audit as a short one: the same
statements however many conversations there are, and on PostgreSQL the indexes that keep
each of them from reading every message or event (bench/history_scale.py measures them at
10,000 conversations and 1,000,000 events)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from activity.admin import tool_stats
from activity.models import ActivityEvent, ActivityFeed
from chat.conversations.search_index import SEARCH_INDEX
from chat.conversations.selectors import conversations_of
from chat.models import Conversation
from tests.support.conversations import next_page, stored
from tests.support.outages import postgres_only
from tests.support.plans import plan_of

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ("/", "/?page=2", "/sidebar/", "/?q=salary", "/?q=salary+penguin", "/sidebar/?q=salary")


def history(owner, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        stored(owner, (f"salary question {n}", f"answer {n}"), ("and then?", "more"), title="")


def statements(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_list_sidebar_and_search_read_as_many_statements_for_70_conversations_as_35(
    alice_client, alice
):
    history(alice, 35)
    few = {url: statements(alice_client, url) for url in PAGES}
    history(alice, 35, start=35)
    assert {url: statements(alice_client, url) for url in PAGES} == few


def test_the_list_knows_a_next_page_follows_without_counting_every_match(alice_client, alice):
    history(alice, 31)
    for url in ("/", "/?q=salary"):
        with CaptureQueriesContext(connection) as captured:
            page = alice_client.get(url).content.decode()
        assert page.count('class="conversation-row"') == 30 and "page=2" in page
        assert not [
            q for q in captured if 'COUNT(*) AS "__count" FROM "chat_conversation"' in q["sql"]
        ]
    first = alice_client.get("/?q=salary").content.decode()
    last = alice_client.get(next_page(first), headers={"HX-Request": "true"}).content.decode()
    assert last.count('class="conversation-row"') == 1 and "page=3" not in last
    assert 'class="conversation-row"' not in alice_client.get("/?page=9").content.decode()


def test_turns_and_last_activity_are_each_conversations_own(alice, bob):
    history(alice, 2)
    stored(bob, ("salary of bob", "hush"))
    rows = [vars(row) for row in conversations_of(alice)]
    assert [row["turn_count"] for row in rows] == [2, 2]
    assert rows[0]["last_activity"] >= rows[1]["last_activity"]
    assert [vars(row)["turn_count"] for row in conversations_of(alice, query="salary")] == [2, 2]


def test_the_list_on_postgres_finds_each_conversations_latest_message_by_index(alice):
    postgres_only()
    history(alice, 3)
    sql, params = conversations_of(alice)[:50].query.sql_with_params()
    assert "message_conversation_time" in plan_of(sql, params)


def test_the_dashboard_reads_the_last_days_tool_results_in_no_order(alice):
    feed = ActivityFeed.objects.create(owner=alice, state="complete")
    ActivityEvent.objects.create(feed=feed, seq=1, kind="tool_result", tool="t", ok=True)
    with CaptureQueriesContext(connection) as captured:
        tool_stats()
    durations = [q["sql"] for q in captured if "duration_ms" in q["sql"]]
    # Sorted, they were joined to every feed to be put in the feeds' order.
    assert durations and all("ORDER BY" not in sql for sql in durations)
    if connection.vendor == "postgresql":
        for sql in (q["sql"] for q in captured if "kind\" = 'tool_result'" in q["sql"]):
            assert "event_kind_time" in plan_of(sql.split(" HOLD FOR ", 1)[-1], ())


def test_conversations_without_messages_are_listed_by_when_they_began(alice):
    older = Conversation.objects.create(owner=alice, title="older")
    newer = Conversation.objects.create(owner=alice, title="newer")
    assert [c.pk for c in conversations_of(alice)] == [newer.pk, older.pk]
    assert [vars(row)["turn_count"] for row in conversations_of(alice)] == [0, 0]


def test_a_search_on_postgres_reads_only_the_askers_messages_from_the_index(alice, bob):
    postgres_only()
    history(alice, 3)
    history(bob, 3)
    sql, params = conversations_of(alice, query="salary")[:50].query.sql_with_params()
    plan = plan_of(sql, params)
    # The owner is a key of the index: another user's matches are never read.
    assert f"Index Cond: ((owner_id = {alice.pk}) AND" in plan
    assert SEARCH_INDEX in plan and "message_search " not in plan


def test_a_search_for_two_words_on_postgres_filters_with_one_look_at_the_index(alice):
    postgres_only()
    history(alice, 3)
    sql, params = conversations_of(alice, query="salary penguin")[:50].query.sql_with_params()
    plan = plan_of(sql, params)
    looks = [line for line in plan.splitlines() if "Index Cond" in line]
    assert [line for line in looks if "''salary'' | ''penguin''" in line]


def test_a_conversation_given_to_another_user_is_found_by_their_search_alone(alice, bob):
    history(alice, 2)
    given = Conversation.objects.filter(owner=alice).first()
    assert given is not None
    Conversation.objects.filter(pk=given.pk).update(owner=bob)
    assert [c.pk for c in conversations_of(bob, query="salary")] == [given.pk]
    assert given.pk not in {c.pk for c in conversations_of(alice, query="salary more")}
    assert len(conversations_of(alice, query="salary")) == 1


def test_two_words_rank_conversations_holding_both_before_those_holding_one(alice):
    history(alice, 2)
    both = stored(alice, ("salary and penguin", "noted"), title="").pk
    titled = stored(alice, ("nothing here", "right"), title="Penguin talk").pk
    found = [c.pk for c in conversations_of(alice, query="penguin salary")]
    assert found[0] == both and set(found[1:]) >= {titled} and len(found) == 4


def rows_of(page: str) -> list[str]:
    rows = r'<li class="conversation-row">\s*<span class="row-main"><a href="([^"]+)"'
    return re.findall(rows, page)


@pytest.mark.parametrize("query", ["", "salary", "salary penguin"])
def test_a_later_page_starts_after_the_last_row_before_it_without_reading_those_again(
    alice_client, alice, query
):
    history(alice, 40)
    # Twins, begun when the 30th row was last active and holding no message: they fall on
    # either side of the first page's end, ordered by their ids alone.
    moment = vars(conversations_of(alice, query=query)[29])["last_activity"]
    for title in ("penguin", "penguin too"):
        Conversation.objects.create(owner=alice, title=title)
    Conversation.objects.filter(title__startswith="penguin").update(created_at=moment)
    url = f"/?q={query.replace(' ', '+')}" if query else "/"
    first = alice_client.get(url).content.decode()
    with CaptureQueriesContext(connection) as captured:
        second = alice_client.get(next_page(first)).content.decode()
    assert not [q for q in captured if "OFFSET" in q["sql"]]
    everything = [c.get_absolute_url() for c in conversations_of(alice, query=query)]
    assert rows_of(first) + rows_of(second) == everything
    assert len(everything) == (42 if query != "salary" else 40)


def test_a_page_whose_link_lost_its_keys_is_still_that_page(alice_client, alice):
    history(alice, 35)
    whole = rows_of(alice_client.get("/").content.decode())
    for mangled in ("", "zz", "1~2~3", "2026-01-01T00:00:00~2026-01-01T00:00:00~x"):
        page = alice_client.get(f"/?page=2&after={mangled}").content.decode()
        assert len(rows_of(page)) == 5 and rows_of(page)[0] not in whole
