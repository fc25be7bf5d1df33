"""A score (a rating or a label) is part of the sealed record of the feed it judges: an edit
or a removal behind the application's back is caught by verify_audit, the exports carry it,
and erasing the account that wrote it empties its note and name wherever it is."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import AsyncClient
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.events import Score
from chat.conversations.services import answer_rate
from chat.models import Message
from tests.support.audit import sql, verify
from tests.support.responses import streamed
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rated(alice, alice_conversation, knowledge_base) -> Message:
    answer = run_turn(alice_conversation, "How do I negotiate my salary?")
    call_id = ActivityEvent.objects.get(feed=answer.feed_id, kind="tool_call").call_id
    answer_rate(user=alice, answer=answer, rating="down", note="wrong documents", call_id=call_id)
    answer_rate(user=alice, answer=answer, rating="up", note="clear in the end")
    return answer


def score_rows(answer: Message) -> list[ActivityEvent]:
    return list(ActivityEvent.objects.filter(feed=answer.feed_id, kind="score").order_by("seq"))


def test_scores_are_sealed_at_the_end_of_their_feed_and_it_verifies(rated):
    rows = score_rows(rated)
    feed = ActivityFeed.objects.get(pk=rated.feed_id)

    assert [row.seq for row in rows] == [feed.event_count - 1, feed.event_count]
    assert feed.chain_head == rows[-1].chain
    status, out = verify()
    assert status == 0 and "1 intact, 0 broken" in out


@pytest.mark.parametrize(
    ("column", "value"), [("state", "up"), ("result_content", "great"), ("call_id", "")]
)
def test_a_score_edited_with_sql_is_caught_where_it_is(rated, column, value):
    first = score_rows(rated)[0]
    sql(f"UPDATE activity_activityevent SET {column} = %s WHERE id = %s", value, first.pk)

    status, out = verify()
    assert status == 1
    assert f"feed {rated.feed_id}: BROKEN, event seq {first.seq} does not match" in out


def test_a_score_removed_with_sql_is_caught(rated):
    last = score_rows(rated)[-1]
    sql("DELETE FROM activity_activityevent WHERE id = %s", last.pk)

    status, out = verify()
    assert status == 1 and f"feed {rated.feed_id}" in out


async def csv_export(user) -> str:
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get("/api/feeds/export/?format=csv")
    return b"".join(await streamed(response)).decode()


def test_the_exports_carry_the_scores(rated, alice, client):
    since = (timezone.now() - timedelta(days=1)).isoformat()
    until = (timezone.now() + timedelta(minutes=1)).isoformat()
    out = io.StringIO()
    call_command("export_evidence", "--since", since, "--until", until, stdout=out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    evidence = [r for r in records if r["record"] == "event" and r.get("kind") == "score"]
    assert [(r["state"], r["result_content"]) for r in evidence] == [
        ("down", "wrong documents"),
        ("up", "clear in the end"),
    ]

    client.force_login(alice)
    feed = client.get(f"/api/feeds/{rated.feed_id}/").json()
    scores = [event for event in feed["events"] if event["type"] == "score"]
    assert [(s["value"], s["note"], s["by"]) for s in scores] == [
        ("down", "wrong documents", "alice"),
        ("up", "clear in the end", "alice"),
    ]
    rows = list(csv.DictReader(io.StringIO(async_to_sync(csv_export)(alice))))
    rated_rows = [row for row in rows if row["type"] == "score"]
    assert [(row["rating"], row["note"]) for row in rated_rows] == [
        ("down", "wrong documents"),
        ("up", "clear in the end"),
    ]


def test_erasing_the_writer_empties_its_scores_in_others_feeds_and_keeps_them_verified(
    rated, alice
):
    reviewer = get_user_model().objects.create_user("reviewer", password="reviewer-password")
    answer_rate(user=reviewer, answer=rated, rating="down", note="reviewer's private remark")

    call_command("erase_user", "reviewer", "--yes")

    theirs = [r.to_event() for r in score_rows(rated) if r.message != "alice"]
    alices = [r.to_event() for r in score_rows(rated) if r.message == "alice"]
    assert len(theirs) == 1 and isinstance(theirs[0], Score)
    assert (theirs[0].value, theirs[0].note, theirs[0].by, theirs[0].by_id) == (
        "down",
        "",
        "",
        None,
    )
    assert [s.note for s in alices if isinstance(s, Score)] == [
        "wrong documents",
        "clear in the end",
    ]
    # The answer's own text is no part of the reviewer's erasure.
    assert Message.objects.get(pk=rated.pk).content
    status, out = verify()
    assert status == 0, out


def test_erasing_the_asker_empties_the_notes_of_their_own_ratings(rated):
    call_command("erase_user", "alice", "--yes")

    assert [(r.state, r.result_content, r.message) for r in score_rows(rated)] == [
        ("down", "", ""),
        ("up", "", ""),
    ]
    status, out = verify()
    assert status == 0, out
