from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import F
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from activity.preferences.feed_prefs import FeedPrefs, surface_prefs
from activity.recording.chain import (
    ALL_SEALED,
    CLOSED_CALL_FIELDS,
    CLOSED_FEED_FIELDS,
    GENESIS,
    SEAL_CURRENT,
    check,
    closing,
    ledger_entry,
    link,
)
from activity.recording.declared import from_row, row_values
from activity.recording.events import (
    MCP_SESSION_KEY,
    RECORDED_TYPES,
    ModelCallDone,
    RecordedEvent,
)
from project.sql import Compiled, insert_rows, update_row
from project.text_rules import storable

# Seqs a running turn may number ahead of what is on disk (see ActivityFeed.seq_reserved).
SEQ_AHEAD = 32


class ActivityFeed(models.Model):
    """Everything the agent did during one turn; one per assistant message."""

    class State(models.TextChoices):
        RUNNING = "running"
        WAITING = "waiting"
        COMPLETE = "complete"
        FAILED = "failed"
        # Its process died (chat.turns.recovery).
        INTERRUPTED = "interrupted"
        # Its owner stopped it: an end they chose, not a failure.
        STOPPED = "stopped"

    # Denormalised from the conversation so feeds are scoped by user without joining chat.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="activity_feeds"
    )
    # The conversation's id, not a foreign key: activity depends on nothing in chat, and the
    # API filters feeds by conversation without a join.
    conversation_id = models.UUIDField(null=True, blank=True, db_index=True)
    # Its conversation was deleted: the owner no longer sees it; admins audit it until purged.
    hidden_from_owner = models.BooleanField(default=False)
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    summary_icon = models.CharField(max_length=8, blank=True)
    summary_text = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The running turn's sign of life; a streaming turn whose feed shows none for a while lost
    # its process (see chat.turns.recovery).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Set by a Stop from another process; the runner sees it at its next heartbeat.
    stop_requested = models.BooleanField(default=False)
    # A running turn shows its lines before it writes them (activity.writing.recorder),
    # never past this seq: who closes it after a crash numbers the last line above any it may
    # have shown.
    seq_reserved = models.PositiveIntegerField(default=SEQ_AHEAD)
    # The language the owner used when asking: the built-in lines and summary are written in
    # it, and the model was told it.
    language = models.CharField(max_length=16, default="en")
    event_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    failed_tool_count = models.PositiveIntegerField(default=0)
    # The turn's token usage, summed over its model calls; null when any call's provider did
    # not say (unknown is never stored as 0).
    model = models.CharField(max_length=100, blank=True, db_index=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_tokens = models.PositiveIntegerField(null=True, blank=True)
    total_tokens = models.PositiveIntegerField(null=True, blank=True, db_index=True)
    # In GLASSBOX_PRICES' currency; null without a price for the model or without usage.
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    # How often its owner expanded the folded feed, and when first (seed 002's next step:
    # are feeds read?). Nothing else about the viewing is kept.
    opened_count = models.PositiveIntegerField(default=0)
    first_opened_at = models.DateTimeField(null=True, blank=True)
    # The hash of its last event when it was last written at a boundary (a pause, a decision,
    # its end): events removed from the end of a chain leave a chain that does not reach it.
    chain_head = models.CharField(max_length=64, blank=True, default="")
    # The SHA-256 of the answer's text at the end (the answer lives in chat, which checks it).
    answer_sha256 = models.CharField(max_length=64, blank=True, default="")
    # Set when the turn ends: a hash over its head, this row and its model calls
    # (activity.recording.chain.closing), also appended to the ledger of all feeds. Blank
    # while it runs, and on feeds that ended before it existed.
    closing = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["-started_at"]
        # Every question reads a user's running turns and recent ones (the limits): a few
        # index entries, however long their history.
        indexes = [
            models.Index(fields=["owner", "state"], name="feed_owner_state"),
            models.Index(fields=["owner", "started_at"], name="feed_owner_started"),
            # The history marks conversations where a tool failed: a few entries to look in.
            models.Index(
                fields=["conversation_id"],
                condition=models.Q(failed_tool_count__gt=0),
                name="feed_failed_tool",
            ),
        ]

    def __str__(self) -> str:
        return f"Feed {self.pk} ({self.state})"

    @property
    def duration_ms(self) -> int | None:
        if self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)

    # The states a feed ends in; it is closed (activity.recording.chain.closing) when it
    # reaches one.
    ENDED = (State.COMPLETE, State.FAILED, State.INTERRUPTED, State.STOPPED)

    @classmethod
    def close(cls, feed_id: int, fields: dict[str, Any]) -> None:
        """Ends a feed with `fields` (FeedRecorder.finished, its `closing` among them) and
        appends its closing to the ledger, in the caller's transaction."""
        update_row(cls, feed_id, fields)
        LedgerEntry.append([(feed_id, fields["closing"])])

    @classmethod
    def end_unsealed(cls, feed_id: int, fields: dict[str, Any]) -> None:
        """Ends a feed whose record fails its check, without a line, a seal or a ledger
        entry: sealing after it would make the damage read intact."""
        update_row(cls, feed_id, fields)

    @classmethod
    def keep_held(cls, feed_id: int, events: list[ActivityEvent], calls: list[ModelCall]) -> None:
        """Writes what a turn numbered and sealed but could not commit (its end met a
        database outage) past the events already stored, in the caller's transaction."""
        stored = ActivityEvent.objects.filter(feed_id=feed_id).aggregate(seq=models.Max("seq"))
        last = stored["seq"] or 0
        insert_rows([row for row in events if row.seq > last])
        insert_rows(calls)

    @classmethod
    def closing_of(cls, feed_id: int) -> str:
        """The closing the feed's stored row and model calls give now."""
        row = cls.objects.filter(pk=feed_id).values(*CLOSED_FEED_FIELDS).get()
        calls = ModelCall.objects.filter(feed_id=feed_id).order_by("round")
        return closing(row, list(calls.values(*CLOSED_CALL_FIELDS)))

    @classmethod
    def seal_end(cls, feed_id: int, *, answer_sha256: str | None = None) -> str:
        """Closes an ended feed as it is stored now (its row updated first), and appends the
        closing to the ledger, in the caller's transaction: for the paths that end or change
        a feed outside a running turn (recovery, a line appended later, an erasure)."""
        if answer_sha256 is not None:
            cls.objects.filter(pk=feed_id).update(answer_sha256=answer_sha256)
        sealed = cls.closing_of(feed_id)
        cls.objects.filter(pk=feed_id).update(closing=sealed)
        LedgerEntry.append([(feed_id, sealed)])
        return sealed

    @classmethod
    def holds(cls, feed_id: int) -> bool:
        """Whether the feed's chain checks out now, and its closing if it has one: nothing is
        ever sealed after a record that fails this (a truncated chain would read intact)."""
        feed = cls.objects.filter(pk=feed_id).values("state", "chain_head", "closing").get()
        rows = ActivityEvent.objects.filter(feed_id=feed_id).order_by("seq")
        checked = check(rows.values("chain", *ALL_SEALED))
        if not checked.intact:
            return False
        ended_once = LedgerEntry.objects.filter(feed_id=feed_id).exists()
        if feed["state"] not in cls.ENDED and ended_once:
            return False  # it cannot be open again
        if feed["state"] == cls.State.RUNNING:
            # It may have written events since its last boundary: the head it recorded then
            # is on its chain.
            return feed["chain_head"] in checked.hashes
        if feed["chain_head"] != checked.head:
            return False
        return not feed["closing"] or feed["closing"] == cls.closing_of(feed_id)

    @classmethod
    def record_opened(cls, *, feed_id: int, owner: Any) -> bool:
        """Its owner expanded this finished feed: one UPDATE, False if it is not theirs to
        open (another user's, hidden, or still running)."""
        return bool(
            cls.objects.filter(
                pk=feed_id, owner=owner, hidden_from_owner=False, finished_at__isnull=False
            ).update(
                opened_count=F("opened_count") + 1,
                first_opened_at=Coalesce(F("first_opened_at"), Now()),
            )
        )


class ModelCall(models.Model):
    """One request to the model during a turn: its usage, and the model's reasoning, which
    the audit keeps and which is never sent back to the model."""

    feed = models.ForeignKey(ActivityFeed, on_delete=models.CASCADE, related_name="model_calls")
    round = models.PositiveSmallIntegerField()
    model = models.CharField(max_length=100, blank=True)
    duration_ms = models.PositiveIntegerField()
    thinking_ms = models.PositiveIntegerField(null=True, blank=True)
    reasoning = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    # A request that failed: its kind, for traces (`error.type`). Not in the feed's closing,
    # like the cost: it says why, the sealed columns say what happened, and sealing a column
    # added later would change every closing stored before it.
    error_type = models.CharField(max_length=100, blank=True, default="")
    # The names of the tools the request offered (an eval dataset's "tools offered"). Not in
    # the closing either, for the same reason as error_type: added after closings were stored.
    tools_offered = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["feed", "round"]
        constraints = [
            models.UniqueConstraint(fields=["feed", "round"], name="activity_model_call_unique")
        ]

    def __str__(self) -> str:
        return f"model call {self.round} of feed {self.feed_id}"

    def done(self) -> ModelCallDone:
        return ModelCallDone(
            round=self.round,
            model=self.model,
            duration_ms=self.duration_ms,
            thinking_ms=self.thinking_ms,
            reasoning=self.reasoning,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            reasoning_tokens=self.reasoning_tokens,
            cached_tokens=self.cached_tokens,
            error_type=self.error_type,
            tools_offered=tuple(self.tools_offered or ()),
        )

    def usage(self) -> dict:
        """The call as the API and exports give it (reasoning left to the caller)."""
        return {
            "round": self.round,
            "model": self.model,
            "duration_ms": self.duration_ms,
            "thinking_ms": self.thinking_ms,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_tokens": self.cached_tokens,
            "cost": None if self.cost is None else str(self.cost),
        }


class ActivityEvent(models.Model):
    """One recorded step of a feed. Append-only: an audit trail is never edited."""

    class Kind(models.TextChoices):
        STATUS = "status"
        TOOL_CALL = "tool_call"
        TOOL_RESULT = "tool_result"
        DECISION = "decision"
        PLAN = "plan"
        TOOL_LOG = "tool_log"
        SCORE = "score"
        APP = "app"
        APP_NOTE = "app_note"

    feed = models.ForeignKey(ActivityFeed, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    icon = models.CharField(max_length=8, blank=True)
    message = models.CharField(max_length=400, blank=True)
    state = models.CharField(max_length=16, blank=True)
    tool = models.CharField(max_length=64, blank=True, db_index=True)
    call_id = models.CharField(max_length=64, blank=True)
    arguments = models.JSONField(null=True, blank=True)
    ok = models.BooleanField(null=True)
    result_summary = models.CharField(max_length=400, blank=True)
    error = models.TextField(blank=True)
    # The result as the model saw it; sent again with later turns of the conversation.
    result_content = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    # The MCP server of the tool; blank for a built-in tool.
    server = models.CharField(max_length=32, blank=True, db_index=True)
    # A tool's last progress report and how many it sent: one row per call, however many.
    progress = models.FloatField(null=True, blank=True)
    progress_total = models.FloatField(null=True, blank=True)
    progress_message = models.CharField(max_length=400, blank=True)
    progress_count = models.PositiveIntegerField(default=0)
    result_structured = models.JSONField(null=True, blank=True)
    # The resources the result pointed to (activity.recording.events.Link); null when none.
    result_links = models.JSONField(null=True, blank=True)
    # When it happened: rows are written in batches, a beat after some of them.
    created_at = models.DateTimeField(default=timezone.now)
    # SHA-256 over this row and the previous row's `chain` in its feed (activity.recording.chain).
    chain = models.CharField(max_length=64, blank=True, default="")
    # How `chain` was computed (activity.recording.chain.SEAL_V1, SEAL_V2): rows keep the
    # version they were sealed with.
    seal_version = models.PositiveSmallIntegerField(default=SEAL_CURRENT)

    class Meta:
        ordering = ["feed", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["feed", "seq"], name="activity_event_seq_unique")
        ]
        # The admin's dashboard reads the last days' events of a few kinds: without it, every
        # event ever stored (bench/history_scale.py: 6 s at 1,000,000 events).
        indexes = [models.Index(fields=["kind", "created_at"], name="event_kind_time")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.kind} {self.message or self.tool}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("Activity events are append-only and cannot be changed.")
        super().save(*args, **kwargs)

    def sealed_values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in ALL_SEALED}

    def seal(self, previous: str) -> ActivityEvent:
        """Links this row after the row whose hash is `previous` (chain.GENESIS for the first
        of its feed); done before it is written, so the hash goes in the same statement."""
        self.chain = link(previous, self.sealed_values())
        return self

    @classmethod
    def head_of(cls, feed_id: int) -> tuple[int, str]:
        """The seq and hash of a feed's last stored event: (0, GENESIS) for none."""
        last = cls.objects.filter(feed_id=feed_id).order_by("-seq").values_list("seq", "chain")
        return last.first() or (0, GENESIS)

    @classmethod
    def from_event(cls, feed: ActivityFeed, event: RecordedEvent) -> ActivityEvent:
        """The row of an event, its columns as activity.recording.events declares them."""
        if event.seq is None:
            raise ValueError("an event is numbered (FeedRecorder.number) before it is stored")
        # What the model, a tool or a server wrote is kept without what no database stores.
        return cls(
            feed=feed, **{column: storable(value) for column, value in row_values(event).items()}
        )

    def to_event(self) -> RecordedEvent:
        return from_row(RECORDED_TYPES[self.kind], functools.partial(getattr, self))

    @property
    def mcp_session_id(self) -> str:
        """A tool result's MCP session (ToolResult.mcp_session_id), read from its column
        alone: the admin and the traces need no other field of the result."""
        session = (
            (self.arguments or {}).get(MCP_SESSION_KEY, "") if self.kind == "tool_result" else ""
        )
        return session if isinstance(session, str) else ""


class FeedPreferences(models.Model):
    """A user's overrides of the GLASSBOX_FEED settings; keys absent here use the defaults."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feed_preferences"
    )
    overrides = models.JSONField(default=dict, blank=True)
    # Pages and the feed in this language on every device; blank follows the browser.
    language = models.CharField(max_length=16, blank=True, default="", choices=settings.LANGUAGES)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "feed preferences"

    def __str__(self) -> str:
        return f"Feed preferences of {self.user}"

    @classmethod
    def settings_for(cls, user_id: int, surface: str = "page") -> tuple[FeedPrefs, str]:
        """The feed preferences on `surface` and the saved language (or ''), in one query."""
        row = cls.objects.filter(user_id=user_id).values_list("overrides", "language").first()
        overrides, language = row or ({}, "")
        return cls.settings_of(overrides, language, surface)

    @staticmethod
    def settings_of(
        overrides: dict[str, Any] | None, language: str | None, surface: str = "page"
    ) -> tuple[FeedPrefs, str]:
        """The settings a stored row (or none: None, None) gives, as `settings_for` reads them."""
        prefs = surface_prefs(
            surface, settings.GLASSBOX_FEED, settings.GLASSBOX_FEED_SURFACES, overrides
        )
        return prefs, language or ""

    @classmethod
    def language_of(cls, user_id: int) -> str:
        return cls.objects.filter(user_id=user_id).values_list("language", flat=True).first() or ""


class ToolCallRecord(ActivityEvent):
    """Tool results across all feeds, as the admin's list of tool calls shows them."""

    class Meta:
        proxy = True
        verbose_name = "tool call"


class ChainReseal(models.Model):
    """A feed whose events were rewritten by the one path that may (an account's erasure)
    and sealed again: when, why, and the head its chain had before."""

    feed = models.ForeignKey(ActivityFeed, on_delete=models.CASCADE, related_name="reseals")
    at = models.DateTimeField(default=timezone.now)
    reason = models.CharField(max_length=200)
    previous_head = models.CharField(max_length=64, blank=True)
    head = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["feed", "at"]

    def __str__(self) -> str:
        return f"Feed {self.feed_id} resealed {self.at:%Y-%m-%d}: {self.reason}"


class LedgerEntry(models.Model):
    """One line of the ledger of all feeds, append-only: a feed's closing when it ends (again
    when it is closed anew: a contact request, an erasure), or that it was purged. Each entry
    hashes the one before it; the feed is referred to by id, not by a foreign key, so an
    entry outlives a feed deleted behind the application's back and shows the gap."""

    PURGED = "purged"

    feed_id = models.PositiveBigIntegerField(db_index=True)
    # The feed's closing, or PURGED.
    sealed = models.CharField(max_length=64)
    # The entry before it; unique, so the ledger is one line even when turns end together.
    previous = models.CharField(max_length=64, unique=True)
    entry = models.CharField(max_length=64)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return f"ledger {self.pk}: feed {self.feed_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("The ledger is append-only and cannot be changed.")
        super().save(*args, **kwargs)

    @classmethod
    def append(cls, entries: list[tuple[int, str]]) -> None:
        """Appends (feed id, sealed) pairs after the last entry, in the caller's transaction.
        Two transactions that append after the same entry meet at the unique `previous`:
        the second waits for the first to commit, fails, and appends after it."""
        if not entries:
            return
        for _attempt in range(100):
            last = _LAST_LEDGER_ENTRY.fetchone()
            previous, rows = last[0] if last else GENESIS, list[LedgerEntry]()
            for feed_id, sealed in entries:
                head = ledger_entry(previous, feed_id, sealed)
                rows.append(cls(feed_id=feed_id, sealed=sealed, previous=previous, entry=head))
                previous = head
            try:
                with transaction.atomic():
                    insert_rows(rows)
                return
            except IntegrityError:
                continue
        raise RuntimeError("could not append to the ledger after 100 attempts")


# Every turn's end appends: built by the ORM once, not at each end, where building it cost
# more than the rest of the append (py-spy, 300 sessions).
_LAST_LEDGER_ENTRY = Compiled(lambda: LedgerEntry.objects.order_by("-id").values_list("entry")[:1])
