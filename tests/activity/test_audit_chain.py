"""The audit trail nobody can quietly rewrite: every event is sealed into its feed's hash
chain as it is written, `verify_audit` finds any change made behind the application's back,
the erasure reseals what it empties and says so, and the evidence export for a period
carries the chain."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from activity.models import ActivityEvent, ActivityFeed, ChainReseal
from activity.recording.chain import GENESIS, link
from chat.conversations.services import contact_request_create
from tests.support.audit import sql, verify
from tests.support.responses import streamed
from tests.support.rows import answer_feed_id
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_turns(alice, alice_conversation, knowledge_base):
    searched = run_turn(alice_conversation, "How do I negotiate my salary?")
    contact = run_turn(alice_conversation, "I would like to talk to a human advisor")
    contact_request_create(message=contact, name="Alice", email="a@example.com", body="Call")
    return searched, contact


def test_every_event_is_sealed_after_the_one_before_it_and_the_feed_keeps_its_head(two_turns):
    for answer in two_turns:
        rows = list(ActivityEvent.objects.filter(feed=answer.feed_id).order_by("seq"))
        assert len(rows) > 1
        previous = GENESIS
        for row in rows:
            assert row.chain == link(previous, row.sealed_values())
            previous = row.chain
        assert ActivityFeed.objects.get(pk=answer.feed_id).chain_head == previous
    status, out = verify()
    assert status == 0
    assert "Checked 2 feed(s)" in out and "2 intact, 0 broken" in out


def test_an_event_edited_with_sql_breaks_its_chain_and_verify_says_where(two_turns):
    searched, _ = two_turns
    found = ActivityEvent.objects.get(feed=searched.feed_id, icon="📄")
    sql(
        "UPDATE activity_activityevent SET message = %s WHERE id = %s",
        "Found 0 documents",
        found.pk,
    )

    status, out = verify()
    assert status == 1
    assert f"feed {searched.feed_id}: BROKEN, event seq {found.seq} does not match" in out
    assert (
        "1 intact, 1 broken" in out
        and "1 feed(s) and 0 ledger problem(s) fail verification" in out
    )


def test_links_are_sealed_once_a_result_has_them_and_older_events_keep_their_hashes(two_turns):
    searched, _ = two_turns
    result = ActivityEvent.objects.filter(feed=searched.feed_id, kind="tool_result").first()
    assert result is not None
    values = result.sealed_values() | {"seal_version": 1}
    # Sealed by the first version, written before the column existed (no key) or without
    # links (null): the same hash.
    before = {k: v for k, v in values.items() if k not in ("result_links", "seal_version")}
    assert link("x", before) == link("x", values | {"result_links": None})
    assert link("x", values | {"result_links": [{"uri": "https://example.org"}]}) != link(
        "x", values
    )
    sql(
        "UPDATE activity_activityevent SET result_links = %s WHERE id = %s",
        json.dumps([{"uri": "https://evil.example", "title": "Proof", "mime_type": ""}]),
        result.pk,
    )
    status, out = verify()
    assert status == 1
    assert f"feed {searched.feed_id}: BROKEN, event seq {result.seq} does not match" in out


@pytest.mark.parametrize("which", ["last", "middle"])
def test_an_event_deleted_with_sql_is_found(two_turns, which):
    searched, _ = two_turns
    rows = ActivityEvent.objects.filter(feed=searched.feed_id).order_by("seq")
    gone = rows.last() if which == "last" else rows[2]
    assert gone is not None
    sql("DELETE FROM activity_activityevent WHERE id = %s", gone.pk)

    status, out = verify()
    assert status == 1 and f"feed {searched.feed_id}: BROKEN" in out
    if which == "last":
        assert "do not reach the head it recorded" in out


def test_since_limits_the_check_to_recent_feeds(two_turns):
    searched, _ = two_turns
    ActivityFeed.objects.filter(pk=searched.feed_id).update(
        started_at=timezone.now() - timedelta(days=40)
    )
    sql("UPDATE activity_activityevent SET tool = 'x' WHERE feed_id = %s", searched.feed_id)
    since = (timezone.now() - timedelta(days=1)).date().isoformat()
    assert verify("--since", since)[0] == 0
    assert verify()[0] == 1
    with pytest.raises(CommandError, match="is not a date"):
        call_command("verify_audit", "--since", "last tuesday")


def test_the_admin_shows_a_feeds_integrity(admin_client, two_turns):
    searched, _ = two_turns
    url = f"/admin/activity/activityfeed/{searched.feed_id}/change/"
    assert "✔ intact" in admin_client.get(url).content.decode()
    sql("UPDATE activity_activityevent SET duration_ms = 1 WHERE feed_id = %s AND seq = 1",
        searched.feed_id)  # fmt: skip
    assert (
        "✘ BROKEN: event seq 1 does not match its hash" in admin_client.get(url).content.decode()
    )


def test_the_erasure_reseals_what_it_empties_and_records_that_it_did(
    admin_client, alice, two_turns
):
    heads = dict(ActivityFeed.objects.filter(owner=alice).values_list("pk", "chain_head"))
    call_command("erase_user", "alice", "--yes")

    assert verify()[0] == 0
    reseals = ChainReseal.objects.order_by("feed_id")
    assert [r.feed_id for r in reseals] == sorted(heads)
    for reseal in reseals:
        assert reseal.previous_head == heads[reseal.feed_id] != reseal.head
        assert reseal.reason == f"account erasure of user {alice.pk}"
    page = admin_client.get(f"/admin/activity/activityfeed/{reseals[0].feed_id}/change/")
    assert "resealed" in page.content.decode() and "account erasure" in page.content.decode()


def evidence(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("export_evidence", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_evidence_for_a_period_holds_feeds_events_approvals_and_a_manifest(
    two_turns, alice_conversation, tmp_path
):
    outside = run_turn(alice_conversation, "What time is it?")
    ActivityFeed.objects.filter(pk=answer_feed_id(outside)).update(
        started_at=timezone.now() - timedelta(days=10)
    )
    since = (timezone.now() - timedelta(days=1)).isoformat()
    until = (timezone.now() + timedelta(minutes=1)).isoformat()
    path = tmp_path / "evidence.ndjson"
    call_command("export_evidence", "--since", since, "--until", until, "-o", str(path))
    text = path.read_text()
    records = [json.loads(line) for line in text.splitlines()]

    feeds = [r["id"] for r in records if r["record"] == "feed"]
    assert sorted(feeds) == sorted(a.feed_id for a in two_turns)  # not the older one
    events = [r for r in records if r["record"] == "event"]
    assert len(events) == ActivityEvent.objects.filter(feed__in=feeds).count()
    stored = dict(ActivityEvent.objects.filter(feed__in=feeds).values_list("id", "chain"))
    assert {e["chain"] for e in events} == set(stored.values())
    chains = {r["feed"]: r for r in records if r["record"] == "chain"}
    assert all(c["intact"] for c in chains.values())
    *body, last = text.splitlines(keepends=True)
    manifest = json.loads(last)
    assert manifest["record"] == "manifest"
    assert manifest["counts"] == {
        "feeds": 2,
        "events": len(events),
        "tool_calls": sum(e["kind"] == "tool_call" for e in events),
        "approvals": 0,
        "receipts": 0,
        "model_calls": sum(r["record"] == "model_call" for r in records),
    }
    assert manifest["counts"]["tool_calls"] == 2 and manifest["counts"]["model_calls"] >= 4
    assert manifest["body_sha256"] == hashlib.sha256("".join(body).encode()).hexdigest()
    assert manifest["broken_count"] == 0

    with pytest.raises(CommandError, match="exists"):
        call_command("export_evidence", "--since", since, "--until", until, "-o", str(path))
    with pytest.raises(CommandError, match="must come after"):
        call_command("export_evidence", "--since", until, "--until", since)
    nowhere = tmp_path / "no-such-folder" / "evidence.ndjson"
    with pytest.raises(CommandError, match=r"Cannot write .*No such file or directory"):
        call_command("export_evidence", "--since", since, "--until", until, "-o", str(nowhere))


def test_the_evidence_names_a_broken_chain(two_turns):
    searched, _ = two_turns
    flip = "UPDATE activity_activityevent SET ok = NOT ok WHERE feed_id = %s AND kind = %s"
    sql(flip, searched.feed_id, "tool_result")
    day = timezone.now().date()
    records = evidence(
        "--since", day.isoformat(), "--until", (day + timedelta(days=1)).isoformat()
    )
    chain = next(r for r in records if r["record"] == "chain" and r["feed"] == searched.feed_id)
    assert not chain["intact"] and "does not match its hash" in chain["problem"]
    assert records[-1]["broken_feeds"] == [searched.feed_id]


def test_admins_export_the_evidence_of_their_selection(admin_user, two_turns):
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    ids = [answer.feed_id for answer in two_turns]

    async def export() -> bytes:
        client = AsyncClient()
        await client.aforce_login(admin_user)
        response = await client.post(
            "/admin/activity/activityfeed/",
            {"action": "export_evidence", "_selected_action": ids},
        )
        assert response.status_code == 200 and response.streaming
        return b"".join(await streamed(response))

    lines = async_to_sync(export)().decode().splitlines()
    manifest = json.loads(lines[-1])
    assert manifest["counts"]["feeds"] == 2 and manifest["broken_count"] == 0


def test_an_event_altered_past_reading_is_in_the_evidence_and_found_broken(two_turns):
    answer = two_turns[0]
    row = ActivityEvent.objects.filter(feed_id=answer.feed_id, kind="status").first()
    assert row is not None
    sql("UPDATE activity_activityevent SET state = 'hacked' WHERE id = %s", row.pk)

    day = timezone.now().date()
    records = evidence(
        "--since", day.isoformat(), "--until", (day + timedelta(days=1)).isoformat()
    )

    events = [r for r in records if r["record"] == "event" and r["chain"] == row.chain]
    assert [e["state"] for e in events] == ["hacked"]
    (chain,) = [r for r in records if r["record"] == "chain" and r["feed"] == answer.feed_id]
    assert not chain["intact"]
    assert records[-1]["counts"]["events"] == sum(r["record"] == "event" for r in records)
