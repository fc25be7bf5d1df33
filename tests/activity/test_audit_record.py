"""The chain covers the whole record: a feed set back to running after its last events went,
a number turned into a string, the feed's own row, its model calls, the approvals' decisions,
the answer's text and a feed deleted whole are all found by `verify_audit`; recovery never
seals after a chain that fails its check; the evidence marks what its closing covers, and the
admin's evidence period gives the same file's feeds from the command. Run on SQLite and on
PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

import io
import json
import logging
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.db import connection
from django.test import AsyncClient
from django.utils import timezone

from activity.auditing.audit import ledger_problems
from activity.models import ActivityEvent, ActivityFeed, LedgerEntry
from activity.recording.chain import GENESIS, SEAL_V1, link
from activity.recording.events import ToolResult
from activity.writing import feeds
from chat.conversations.services import conversation_delete, deleted_conversations_purge
from chat.models import Conversation, Message, ToolApproval
from chat.turns.recovery import dead_turns_recover
from tests.support.audit import sql, verify
from tests.support.lock_waits import second_waits_for_first
from tests.support.responses import streamed
from tests.support.rows import answer_feed_id
from tests.support.turns import decided_turn, run_turn, stopped_turn

pytestmark = pytest.mark.django_db(transaction=True)

EMAIL = "Email advisor@example.com: can we meet on Tuesday?"


@pytest.fixture
def answered(alice_conversation, knowledge_base) -> Message:
    answer = run_turn(alice_conversation, "How do I negotiate my salary?")
    # A later turn, so the first is not the ledger's last entry.
    run_turn(alice_conversation, "What time is it?")
    return answer


def test_a_turn_ends_closed_and_in_the_ledger(answered):
    feed = ActivityFeed.objects.get(pk=answered.feed_id)
    assert feed.closing and feed.answer_sha256
    assert LedgerEntry.objects.filter(feed_id=feed.pk).latest("pk").sealed == feed.closing
    status, out = verify()
    assert status == 0 and "2 intact, 0 broken" in out


@pytest.mark.parametrize("head", ["kept", "reset"])
def test_the_last_events_removed_and_the_feed_set_back_to_running_is_found(answered, head):
    last_two = ActivityEvent.objects.filter(feed=answered.feed_id).order_by("-seq")[:2]
    sql("DELETE FROM activity_activityevent WHERE id IN (%s, %s)", *[e.pk for e in last_two])
    sql(
        "UPDATE activity_activityfeed SET state = 'running', closing = '', finished_at = NULL"
        + (", chain_head = ''" if head == "reset" else "")
        + " WHERE id = %s",
        answered.feed_id,
    )

    status, out = verify()
    assert status == 1 and f"feed {answered.feed_id}: BROKEN" in out
    if head == "kept":
        assert "do not reach the head it recorded" in out
    else:
        assert "the ledger says it ended, yet it reads as still open" in out


def test_recovery_never_seals_after_a_chain_that_fails_its_check(answered, caplog):
    feed_id = answered.feed_id
    last = ActivityEvent.objects.filter(feed=feed_id).order_by("-seq").first()
    assert last is not None
    sql("DELETE FROM activity_activityevent WHERE id = %s", last.pk)
    long_ago = timezone.now() - timedelta(minutes=10)
    sql(
        "UPDATE activity_activityfeed SET state = 'running', closing = '', chain_head = '', "
        "started_at = %s, heartbeat_at = %s WHERE id = %s",
        long_ago,
        long_ago,
        feed_id,
    )
    sql("UPDATE activity_activityevent SET created_at = %s WHERE feed_id = %s", long_ago, feed_id)
    sql("UPDATE chat_message SET state = 'streaming' WHERE id = %s", answered.pk)
    count = ActivityEvent.objects.filter(feed=feed_id).count()

    with caplog.at_level(logging.ERROR, logger="glassbox.recovery"):
        assert dead_turns_recover(conversation_id=answered.conversation_id) == 1

    assert Message.objects.get(pk=answered.pk).state == Message.State.INTERRUPTED
    feed = ActivityFeed.objects.get(pk=feed_id)
    # Closed, but nothing sealed after the damage: no ⚠️ line, no closing, no new entry.
    assert feed.state == "interrupted" and feed.closing == ""
    assert ActivityEvent.objects.filter(feed=feed_id).count() == count
    assert LedgerEntry.objects.filter(feed_id=feed_id).count() == 1
    assert f"feed {feed_id} of turn {answered.pk} fails its chain check" in caplog.text
    status, out = verify()
    assert status == 1 and f"feed {feed_id}: BROKEN" in out


def test_recovery_seals_a_dead_turn_whose_chain_holds(alice_conversation):
    from chat.turns.admission import admit

    answer = admit(conversation=alice_conversation, text="How do I negotiate my salary?").answer
    long_ago = timezone.now() - timedelta(minutes=10)
    ActivityFeed.objects.filter(pk=answer_feed_id(answer)).update(started_at=long_ago)
    Message.objects.filter(pk=answer.pk).update(content="Partial")

    assert dead_turns_recover(conversation_id=alice_conversation.pk) == 1

    feed = ActivityFeed.objects.get(pk=answer_feed_id(answer))
    assert feed.state == "interrupted" and feed.closing
    assert LedgerEntry.objects.get(feed_id=feed.pk).sealed == feed.closing
    assert verify()[0] == 0
    sql("UPDATE chat_message SET content = 'Something else' WHERE id = %s", answer.pk)
    status, out = verify()
    assert status == 1 and "its answer's text is not the text its closing sealed" in out


def result_with(feed_id: int, structured) -> ActivityEvent:
    """A tool's structured result appended to a feed by the application."""
    written = feeds.append_late(
        feed_id,
        ToolResult(call_id="call_x", ok=True, summary="1 record", duration_ms=5,
                   structured=structured),
    )  # fmt: skip
    assert written.seq is not None
    return ActivityEvent.objects.get(feed_id=feed_id, seq=written.seq)


def test_a_number_turned_into_a_string_breaks_the_chain(answered):
    row = result_with(answered.feed_id, {"salary": 58000, "currency": "EUR"})
    assert verify()[0] == 0

    sql(
        "UPDATE activity_activityevent SET result_structured = %s WHERE id = %s",
        json.dumps({"salary": "58000.0", "currency": "EUR"}),
        row.pk,
    )
    status, out = verify()
    assert status == 1
    assert f"feed {answered.feed_id}: BROKEN, event seq {row.seq} does not match" in out


def test_numbers_as_the_database_gives_them_back_keep_their_seal(answered):
    # Key order, exponents, floats without a fraction and integers past a double's precision:
    # PostgreSQL's jsonb reorders and rewrites some of them, none of which is tampering.
    result_with(
        answered.feed_id,
        {"z": 1e20, "b": 2.0, "a": 0.1, "n": -1.5e-7, "big": 10**30, "e": 1e300,
         "list": [1, 1.5, True, None, "1"], "nested": {"y": 3, "x": 4.25}},
    )  # fmt: skip
    assert verify()[0] == 0


def test_an_event_sealed_by_the_first_version_still_verifies_and_cannot_be_promoted(
    alice_conversation,
):
    from chat.turns.admission import admit

    answer = admit(conversation=alice_conversation, text="How do I negotiate my salary?").answer
    row = ActivityEvent(feed_id=answer_feed_id(answer), seq=1, kind="status", icon="🔍",
                        message="Looking up", seal_version=SEAL_V1)  # fmt: skip
    row.seal(GENESIS).save()
    assert (
        row.chain
        == link(GENESIS, row.sealed_values())
        != link(GENESIS, row.sealed_values() | {"seal_version": 2})
    )
    assert verify()[0] == 0
    sql("UPDATE activity_activityevent SET seal_version = 2 WHERE id = %s", row.pk)
    assert verify()[0] == 1


FEED_CHANGES = {
    "owner": "owner_id = (SELECT id FROM auth_user WHERE username = 'bob')",
    "started_at": "started_at = started_at - INTERVAL '40 days'",
    "summary": "summary_text = 'Nothing happened'",
    "tokens": "total_tokens = 1",
    "state": "state = 'failed'",
    "counts": "tool_call_count = 0",
}


@pytest.mark.parametrize("what", sorted(FEED_CHANGES))
def test_the_feeds_own_record_changed_is_found(answered, bob, what):
    change = FEED_CHANGES[what]
    if connection.vendor == "sqlite":
        change = change.replace("started_at - INTERVAL '40 days'", "'2020-01-01 00:00:00'")
    sql(f"UPDATE activity_activityfeed SET {change} WHERE id = %s", answered.feed_id)

    status, out = verify()
    assert status == 1
    assert f"feed {answered.feed_id}: BROKEN, its record" in out and "its closing" in out


def test_a_model_calls_tokens_changed_are_found(answered):
    sql(
        "UPDATE activity_modelcall SET completion_tokens = COALESCE(completion_tokens, 0) + 1000 "
        "WHERE feed_id = %s",
        answered.feed_id,
    )
    status, out = verify()
    assert status == 1 and f"feed {answered.feed_id}: BROKEN, its record" in out


def test_the_answers_text_changed_is_found(answered):
    sql("UPDATE chat_message SET content = 'Ask for less.' WHERE id = %s", answered.pk)
    status, out = verify()
    assert status == 1
    assert f"feed {answered.feed_id}: BROKEN, its answer's text is not the text" in out


def test_an_approvals_decision_changed_is_found(alice, alice_conversation):
    answer = decided_turn(alice_conversation, EMAIL, user=alice, approve=False)
    assert answer.state == Message.State.COMPLETE
    assert verify()[0] == 0

    sql("UPDATE chat_toolapproval SET decision = 'approve' WHERE answer_id = %s", answer.pk)
    status, out = verify()
    assert status == 1
    approval = ToolApproval.objects.get(answer=answer)
    assert (
        f"feed {answer.feed_id}: BROKEN, approval {approval.pk} (call {approval.call_id}): "
        "its decision is not the one its chain sealed"
    ) in out


@pytest.fixture
def approved_with_edits(alice, alice_conversation) -> ToolApproval:
    answer = decided_turn(
        alice_conversation,
        EMAIL,
        user=alice,
        approve=True,
        reason="Dean runs the meetings",
        edits={"to": "dean@example.com"},
    )
    assert answer.state == Message.State.COMPLETE
    approval = ToolApproval.objects.select_related("answer").get(answer=answer)
    assert approval.edited_arguments is not None
    assert approval.edited_arguments["to"] == "dean@example.com"
    return approval


def _edited_again(approval: ToolApproval) -> dict:
    assert approval.edited_arguments is not None
    return {"edited_arguments": approval.edited_arguments | {"to": "eve@example.com"}}


# Each column of an approval the chain vouches for, changed after the fact as a tamperer
# with the database would, and what verify_audit says of it.
ROW_CHANGES = {
    "edited arguments": (_edited_again, "its edited arguments are not the ones its chain"),
    "fingerprint": (
        lambda row: {"fingerprint": "sha256:" + "0" * 64},
        "its fingerprint is not the one of the arguments its chain sealed",
    ),
    "decision": (lambda row: {"decision": "deny"}, "its decision is not the one its chain"),
    "reason": (lambda row: {"reason": "Nobody objected"}, "its reason is not the one its chain"),
    "arguments": (
        lambda row: {"arguments": row.arguments | {"to": "eve@example.com"}},
        "its arguments are not the ones its chain sealed",
    ),
    "set back to waiting": (
        lambda row: {"decision": "", "decided_at": None},
        "its chain holds a decision the row does not",
    ),
}


def test_an_approval_with_edits_and_a_reason_verifies_untouched(approved_with_edits):
    status, out = verify()
    assert status == 0 and "1 intact, 0 broken" in out


@pytest.mark.parametrize("change", ROW_CHANGES)
def test_an_approval_changed_after_the_fact_is_found_and_named(
    approved_with_edits, admin_client, change
):
    approval = approved_with_edits
    changed, said = ROW_CHANGES[change]
    ToolApproval.objects.filter(pk=approval.pk).update(**changed(approval))

    status, out = verify()
    assert status == 1
    assert (
        f"feed {approval.answer.feed_id}: BROKEN, approval {approval.pk} "
        f"(call {approval.call_id}): {said}"
    ) in out
    # The admin says so on the feed, on the approval's page and in the approvals' list.
    feed_page = admin_client.get(f"/admin/activity/activityfeed/{approval.answer.feed_id}/change/")
    assert f"✘ BROKEN: approval {approval.pk}" in feed_page.content.decode()
    row_page = admin_client.get(f"/admin/chat/toolapproval/{approval.pk}/change/")
    assert f"✘ BROKEN: approval {approval.pk} (call {approval.call_id}): {said}" in (
        row_page.content.decode()
    )
    assert "✘ BROKEN" in admin_client.get("/admin/chat/toolapproval/").content.decode()


def test_an_untouched_approval_reads_intact_in_the_admin(approved_with_edits, admin_client):
    approval = approved_with_edits
    row_page = admin_client.get(f"/admin/chat/toolapproval/{approval.pk}/change/").content
    assert "✔ intact: as its feed&#x27;s chain sealed it" in row_page.decode()
    assert "BROKEN" not in admin_client.get("/admin/chat/toolapproval/").content.decode()


@pytest.mark.parametrize("ledger", ["kept", "its entries removed too"])
def test_a_feed_deleted_whole_is_found(answered, ledger):
    feed_id = answered.feed_id
    for statement in (
        "DELETE FROM chat_message WHERE id = %s",
        "DELETE FROM activity_activityevent WHERE feed_id = %s",
        "DELETE FROM activity_modelcall WHERE feed_id = %s",
        "DELETE FROM activity_activityfeed WHERE id = %s",
    ):
        sql(statement, answered.pk if "chat_message" in statement else feed_id)
    if ledger != "kept":
        sql("DELETE FROM activity_ledgerentry WHERE feed_id = %s", feed_id)

    status, out = verify()
    assert status == 1
    if ledger == "kept":
        assert f"feed {feed_id} is in the ledger but gone, and was never purged" in out
    else:
        assert "does not follow the one before it (removed)" in out


def test_feeds_purged_after_the_retention_period_leave_no_alarm(answered, alice_conversation):
    conversation_delete(conversation=alice_conversation)
    long_ago = timezone.now() - timedelta(days=400)
    Conversation.all_objects.filter(pk=alice_conversation.pk).update(deleted_at=long_ago)
    assert deleted_conversations_purge() == 1
    assert not ActivityFeed.objects.exists()
    assert verify()[0] == 0


def test_a_line_appended_to_a_damaged_feed_does_not_seal_over_the_damage(answered):
    from chat.conversations.services import contact_request_create

    sql(
        "UPDATE activity_activityfeed SET summary_text = 'Nothing' WHERE id = %s", answered.feed_id
    )
    contact_request_create(message=answered, name="Alice", email="a@example.com", body="Call")
    status, out = verify()
    assert status == 1 and f"feed {answered.feed_id}: BROKEN, its record" in out


def evidence_records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_the_evidence_marks_what_the_closing_covers(answered, alice_conversation):
    from chat.turns.admission import admit

    running = admit(conversation=Conversation.objects.create(owner=answered.conversation.owner),
                    text="Still going").answer  # fmt: skip
    out = io.StringIO()
    day = timezone.now().date()
    call_command("export_evidence", "--since", day.isoformat(),
                 "--until", (day + timedelta(days=1)).isoformat(), stdout=out)  # fmt: skip
    records = evidence_records(out.getvalue())
    feeds = {r["id"]: r for r in records if r["record"] == "feed"}

    closed = feeds[answered.feed_id]
    assert "started_at" in closed["sealed_by_closing"]
    assert (
        "summary" in closed["sealed_by_closing"] and "total_tokens" in closed["sealed_by_closing"]
    )
    # The user's name can change (an erasure renames it): their id is what is sealed.
    assert "user_id" in closed["sealed_by_closing"] and "user" not in closed["sealed_by_closing"]
    calls = [r for r in records if r["record"] == "model_call" and r["feed"] == answered.feed_id]
    assert calls and all("prompt_tokens" in c["sealed_by_closing"] for c in calls)
    assert all("cost" not in c["sealed_by_closing"] for c in calls)
    # A running feed's record is covered by nothing yet.
    assert feeds[running.feed_id]["sealed_by_closing"] == []
    manifest = records[-1]
    assert manifest["ledger_head"] == LedgerEntry.objects.order_by("-id")[0].entry


def test_the_admins_evidence_period_reproduces_with_the_command(admin_user, answered):
    ids = list(ActivityFeed.objects.values_list("pk", flat=True))

    async def export() -> bytes:
        client = AsyncClient()
        await client.aforce_login(admin_user)
        response = await client.post(
            "/admin/activity/activityfeed/",
            {"action": "export_evidence", "_selected_action": ids},
        )
        return b"".join(await streamed(response))

    from_admin = evidence_records(async_to_sync(export)().decode())
    manifest = from_admin[-1]
    assert manifest["selection"] == "every feed begun in the period"
    out = io.StringIO()
    call_command("export_evidence", "--since", manifest["since"], "--until", manifest["until"],
                 stdout=out)  # fmt: skip
    from_command = evidence_records(out.getvalue())

    def feeds(records):
        return sorted(r["id"] for r in records if r["record"] == "feed")

    assert feeds(from_command) == feeds(from_admin) == sorted(ids)
    assert from_command[-1]["heads_sha256"] == manifest["heads_sha256"]
    assert from_command[-1]["counts"] == manifest["counts"]


def test_an_admin_selection_that_is_not_a_whole_period_says_so(admin_user, answered):
    first = ActivityFeed.objects.order_by("pk").first()
    assert first is not None
    third = run_turn(answered.conversation, "What time is it now?")

    async def export() -> bytes:
        client = AsyncClient()
        await client.aforce_login(admin_user)
        response = await client.post(
            "/admin/activity/activityfeed/",
            {"action": "export_evidence", "_selected_action": [first.pk, third.feed_id]},
        )
        return b"".join(await streamed(response))

    manifest = evidence_records(async_to_sync(export)().decode())[-1]
    assert manifest["selection"] == "2 selected of the 3 feeds begun in the period"


def test_turns_that_end_together_keep_the_ledger_one_line():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: nothing to meet")
    second_waits_for_first(
        # The second waits on the first's uncommitted entry (the unique `previous`).
        lambda: LedgerEntry.append([(1, "a" * 64)]),
        lambda: LedgerEntry.append([(2, "b" * 64)]),
    )

    one, two = LedgerEntry.objects.order_by("id")
    assert (one.feed_id, one.previous, two.feed_id, two.previous) == (1, GENESIS, 2, one.entry)
    assert not [p for p in ledger_problems() if "ledger entry" in p]


def test_admins_read_the_ledger_and_nobody_changes_it(admin_client, answered):
    entry = LedgerEntry.objects.get(feed_id=answered.feed_id)
    page = admin_client.get("/admin/activity/ledgerentry/").content.decode()
    assert entry.entry in page
    assert admin_client.get("/admin/activity/ledgerentry/add/").status_code == 403
    delete = f"/admin/activity/ledgerentry/{entry.pk}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    entry.sealed = "x" * 64
    with pytest.raises(ValueError, match="append-only"):
        entry.save()
    assert LedgerEntry.objects.filter(pk=entry.pk, sealed=ActivityFeed.objects.get(
        pk=answered.feed_id).closing).exists()  # fmt: skip


@pytest.mark.parametrize("end", ["stopped while waiting", "timed out"])
def test_a_turn_that_ends_without_a_decision_by_its_owner_is_closed_and_verifies(
    alice_conversation, end
):
    from chat.turns import resuming
    from chat.turns.registry import finish_all

    answer = run_turn(alice_conversation, EMAIL)
    assert answer.state == Message.State.WAITING
    if end == "timed out":
        answer.approvals.update(deadline=timezone.now() - timedelta(seconds=1))

    async def settle() -> None:
        if end == "timed out":
            assert await resuming.settle_expired() == 1
        else:
            assert await resuming.stop_waiting(answer.pk)
        await finish_all()

    async_to_sync(settle)()

    feed = ActivityFeed.objects.get(pk=answer_feed_id(answer))
    assert feed.state == ("stopped" if end == "stopped while waiting" else "complete")
    assert feed.closing and LedgerEntry.objects.get(feed_id=feed.pk).sealed == feed.closing
    assert verify()[0] == 0


def test_a_running_turn_its_owner_stopped_is_sealed_as_stopped_and_verifies(
    alice_conversation, knowledge_base, gate
):
    held = gate(after=20, request=2)
    answer = stopped_turn(alice_conversation, "How do I negotiate my salary?", held)

    feed = answer.answer_feed
    assert (answer.state, feed.state) == ("stopped", "stopped") and answer.content
    assert feed.closing and LedgerEntry.objects.get(feed_id=feed.pk).sealed == feed.closing
    assert verify()[0] == 0
    # Its end is sealed with the rest: a stop passed off as a finished answer is found.
    sql("UPDATE activity_activityfeed SET state = 'complete' WHERE id = %s", feed.pk)
    status, out = verify()
    assert status == 1 and f"feed {feed.pk}: BROKEN" in out
    assert "does not match its closing" in out


def test_the_admin_shows_a_feeds_closing_and_what_fails_in_its_record(admin_client, answered):
    url = f"/admin/activity/activityfeed/{answered.feed_id}/change/"
    closing = ActivityFeed.objects.get(pk=answered.feed_id).closing
    assert f"closed {closing[:16]}… (its record, model calls and text)" in (
        admin_client.get(url).content.decode()
    )
    sql("UPDATE chat_message SET content = 'Ask for less.' WHERE id = %s", answered.pk)
    page = admin_client.get(url).content.decode()
    assert "✘ BROKEN: its answer&#x27;s text is not the text its closing sealed" in page


def test_a_paused_feed_whose_last_line_was_removed_is_found(alice_conversation):
    answer = run_turn(alice_conversation, EMAIL)
    assert answer.state == Message.State.WAITING
    assert verify()[0] == 0
    waiting = ActivityEvent.objects.filter(feed=answer.feed_id).order_by("-seq").first()
    assert waiting is not None
    assert waiting.icon == "⏸"
    sql("DELETE FROM activity_activityevent WHERE id = %s", waiting.pk)

    status, out = verify()
    assert status == 1
    assert f"feed {answer.feed_id}: BROKEN, its last events do not reach the head" in out
