from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.translation import gettext as _

from activity.models import ActivityFeed
from project.text_rules import without_bidi_controls

TITLE_LENGTH = 80


class LiveConversations(models.Manager):
    """What users reach: a deleted conversation is gone for them at once."""

    def get_queryset(self):
        return super().get_queryset().filter(deleted_at__isnull=True)


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    # Deleted by its owner: hidden from them, kept for the audit until the retention period
    # ends and `manage.py purge_deleted` removes it.
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)

    all_objects = models.Manager()
    objects = LiveConversations()

    class Meta:
        ordering = ["-updated_at"]
        default_manager_name = "objects"
        base_manager_name = "all_objects"

    def __str__(self) -> str:
        return self.display_title

    def get_absolute_url(self) -> str:
        return reverse("chat:conversation_detail", args=[self.pk])

    @property
    def display_title(self) -> str:
        """The title a user gave it, else its first question: derived, not stored, so asking
        costs no extra write."""
        # A titled conversation never reads its first question (a query, unless annotated).
        return self.title_of(self.title, None if self.title else self.first_question)

    @classmethod
    def title_of(cls, title: str, first_question: str | None) -> str:
        """display_title's rule, for a list that read the first question alongside."""
        if title:
            return without_bidi_controls(title)
        return cls.title_from(first_question) if first_question else _("New conversation")

    @cached_property
    def first_question(self) -> str | None:
        """Read on first use; lists annotate it instead, to avoid a query per row."""
        return (
            self.messages.filter(role=Message.Role.USER)
            .order_by("id")
            .values_list("content", flat=True)
            .first()
        )

    @property
    def group_name(self) -> str:
        return self.group_name_for(self.pk)

    @staticmethod
    def group_name_for(conversation_id: uuid.UUID) -> str:
        """The channel-layer group every open socket of this conversation joins."""
        return f"conversation-{conversation_id.hex}"

    @staticmethod
    def title_from(question: str) -> str:
        text = " ".join(without_bidi_controls(question).split())
        if len(text) <= TITLE_LENGTH:
            return text
        return text[: TITLE_LENGTH - 1].rstrip() + "…"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class State(models.TextChoices):
        STREAMING = "streaming"
        # Paused until its owner approves or denies a tool call; no process holds it.
        WAITING = "waiting"
        COMPLETE = "complete"
        FAILED = "failed"
        # Its process died (chat.turns.recovery): the server stopped it, not its owner.
        INTERRUPTED = "interrupted"
        # Its owner stopped it (chat.turns.stopping): an end they chose, not a failure.
        STOPPED = "stopped"

    # A turn not yet over: running, or waiting for a decision.
    OPEN_STATES = (State.STREAMING, State.WAITING)
    # Ended before the answer was finished: its text and its last step were cut.
    CUT_STATES = (State.STOPPED, State.FAILED, State.INTERRUPTED)

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.COMPLETE)
    # A program's id for the turn (assistant messages only): asking again with the same id
    # joins the turn instead of starting another.
    client_id = models.UUIDField(null=True, blank=True)
    # A regenerated answer names the one it replaces, on the page and for the model; the old
    # one stays in history as an earlier version, with its feed.
    replaces = models.OneToOneField(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="replaced_by"
    )
    # The turn's activity; assistant messages only.
    feed = models.OneToOneField(
        ActivityFeed, on_delete=models.PROTECT, null=True, blank=True, related_name="message"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        # A conversation's latest message, for the history's order by last activity.
        indexes = [
            models.Index(fields=["conversation", "created_at"], name="message_conversation_time")
        ]
        constraints = [
            # The database, not a check-then-act race, guarantees one running turn per
            # conversation.
            models.UniqueConstraint(
                fields=["conversation"],
                condition=models.Q(state__in=["streaming", "waiting"]),
                name="one_open_turn_per_conversation",
            ),
            models.UniqueConstraint(
                fields=["conversation", "client_id"], name="one_turn_per_client_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

    @property
    def dom_id(self) -> str:
        return f"m-{self.pk}"

    @property
    def answer_feed(self) -> ActivityFeed:
        """The feed of an answer; a question has none."""
        if self.feed is None:
            raise ValueError(f"message {self.pk} is a question: it has no feed")
        return self.feed


class Document(models.Model):
    """A knowledge-base entry that the search_documents tool ranks and returns."""

    title = models.CharField(max_length=200)
    body = models.TextField()
    language = models.CharField(max_length=16, default="en")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class ContactRequest(models.Model):
    """What a user sent through the contact form that the agent opened in their page."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="contact_requests"
    )
    message = models.OneToOneField(
        Message, on_delete=models.CASCADE, related_name="contact_request"
    )
    name = models.CharField(max_length=100)
    email = models.EmailField()
    body = models.TextField(max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


class Revocation(models.Model):
    """A right taken away, written down for the serving processes the channel layer does not
    reach (the in-memory layer: a shell or `erase_user` runs in a process of its own). Each
    serving process reads the new rows once a second and tells its own sockets
    (chat.socket.relay); rows older than a few minutes are of no use and are deleted."""

    group = models.CharField(max_length=200)
    reason = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.group}: {self.reason}"


class ToolApprovals(models.QuerySet):
    def of_call(self, conversation_id: uuid.UUID, call_id: str) -> ToolApprovals:
        """The call as the conversation's latest answer to make it asked: a regenerated answer
        reuses the call ids of the answer it replaces, whose approvals stay decided. Only the
        last answer can be waiting, so the first row is the one a decision is for."""
        return self.filter(answer__conversation_id=conversation_id, call_id=call_id).order_by(
            "-answer_id"
        )

    def waiting(self) -> ToolApprovals:
        """Undecided calls that still wait: a paused turn's (the turn's state is the truth: a
        call stopped or timed out no longer waits), or an app's, which waits on no turn."""
        return self.filter(
            models.Q(answer__state=Message.State.WAITING) | ~models.Q(app_of=""), decision=""
        )


class ToolApproval(models.Model):
    """A tool call that waits for its owner's decision, with what the agent loop needs to go
    on from it in any process: the conversation as the model had it and the calls left."""

    class Decision(models.TextChoices):
        APPROVE = "approve"
        DENY = "deny"
        TIMEOUT = "timeout"
        STOPPED = "stopped"

    answer = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="approvals")
    call_id = models.CharField(max_length=64)
    tool = models.CharField(max_length=64)
    # The tool's name for people when it asked (an MCP server's, known only to that turn);
    # a built-in tool's card names it in its reader's language instead.
    title = models.CharField(max_length=80, blank=True)
    arguments = models.JSONField(default=dict)
    # chat.agent.approval.Paused, as JSON.
    state = models.JSONField()
    asked_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField(db_index=True)
    decision = models.CharField(max_length=16, choices=Decision.choices, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    reason = models.CharField(max_length=500, blank=True)
    # The receipt (activity.recording.receipts): the fingerprint of `arguments` as the card
    # showed them, the tool's parameters (JSON schema) an edit is checked against, and the
    # arguments the owner approved instead, if they changed them.
    fingerprint = models.CharField(max_length=80, blank=True)
    parameters = models.JSONField(null=True, blank=True)
    edited_arguments = models.JSONField(null=True, blank=True)
    # The call whose app asked (chat.turns.app_calls): such a call waits after its turn
    # ended, and its decision runs it instead of resuming the turn. Empty for the model's.
    app_of = models.CharField("asked by the app of call", max_length=64, blank=True)

    objects = ToolApprovals.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["answer", "call_id"], name="one_approval_per_call")
        ]

    def __str__(self) -> str:
        return f"{self.tool} ({self.decision or 'waiting'})"


class OutboxEmail(models.Model):
    """What the demo's send_email tool "sends": it only ever lands here, never in a mailbox."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True)
    to = models.CharField(max_length=254)
    subject = models.CharField(max_length=200)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "outbox email"

    def __str__(self) -> str:
        return f"To {self.to}: {self.subject}"


class Elicitation(models.Model):
    """A question an MCP server asked the person during a tool call (form or URL mode), and
    its answer: what, who and when. What a server marks sensitive is kept as a SHA-256, never
    in clear (chat.agent.mcp.elicit_schema.kept)."""

    class Mode(models.TextChoices):
        FORM = "form"
        URL = "url"
        # A request to use the turn's model (MCP sampling): `requested_schema` holds the
        # request as shown (chat.agent.sampling), `content` the request as approved.
        SAMPLING = "sampling"

    class State(models.TextChoices):
        WAITING = "waiting"
        ACCEPTED = "accept"
        DECLINED = "decline"
        CANCELLED = "cancel"
        # Nobody answered before the deadline: the server was told `cancel`.
        EXPIRED = "expired"
        # The call, its turn or the server's session ended first: nobody can answer now.
        ENDED = "ended"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    answer = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="elicitations")
    call_id = models.CharField(max_length=64)
    server = models.CharField(max_length=64)
    mode = models.CharField(max_length=8, choices=Mode.choices)
    # As the server sent them: untrusted text.
    message = models.TextField()
    requested_schema = models.JSONField(default=dict, blank=True)
    url = models.TextField(blank=True)
    server_elicitation_id = models.CharField(max_length=200, blank=True)
    asked_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField(db_index=True)
    state = models.CharField(
        max_length=8, choices=State.choices, default=State.WAITING, db_index=True
    )
    # The answer as kept: sensitive fields as "sha256:<hex>".
    content = models.JSONField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    # Why it ended without an answer, for people.
    reason = models.CharField(max_length=300, blank=True)
    # A URL-mode question the server said was completed.
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["asked_at"]

    def __str__(self) -> str:
        return f"{self.server}: {self.get_state_display()}"
