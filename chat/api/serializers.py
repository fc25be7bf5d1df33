from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from activity.recording.events import SCORE_NOTE_LIMIT
from chat.asks.receipts import EditRefused
from chat.conversations.services import TitleInvalid, title_clean
from chat.models import Conversation, Message
from chat.turns import actions


def refusal(problem: actions.Unreadable) -> serializers.ValidationError:
    """A request chat.turns.actions could not read, as a 400's body: by field when a field
    is at fault, else {"detail": …}."""
    if problem.field:
        return serializers.ValidationError({problem.field: [str(problem)]})
    return serializers.ValidationError({"detail": str(problem)})


def edit_refusal(refused: EditRefused) -> serializers.ValidationError:
    """Edits that do not fit the tool, as a 400's body: under `edited_arguments`, by the
    argument at fault when one is (as DRF words a nested field's errors)."""
    if refused.field:
        return serializers.ValidationError({"edited_arguments": {refused.field: [str(refused)]}})
    return serializers.ValidationError({"edited_arguments": [str(refused)]})


class StrictCharField(serializers.CharField):
    """Text only: DRF would turn 0 or false into "0" or "False"."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictUUIDField(serializers.UUIDField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class ConversationSerializer(serializers.ModelSerializer):
    # Not trimmed before its length is checked: the schema limits what is sent.
    title = StrictCharField(
        max_length=200, required=False, allow_blank=True, trim_whitespace=False
    )

    class Meta:
        model = Conversation
        fields = ["id", "title", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]

    def run_validation(self, data: Any = empty) -> Any:
        """A body is read as every request is (chat.turns.actions.fields_of): an object
        holding only the fields a client may set."""
        if data is not empty:
            writable = {name for name, field in self.fields.items() if not field.read_only}
            try:
                actions.fields_of(data, writable)
            except actions.Unreadable as problem:
                raise refusal(problem) from None
        return super().run_validation(data)

    def validate_title(self, title: str) -> str:
        if not title:
            return title  # untitled: the first question names it
        try:
            return title_clean(title)
        except TitleInvalid as problem:
            raise serializers.ValidationError(str(problem)) from None

    def to_representation(self, instance: Conversation) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["title"] = instance.display_title  # the first question until renamed
        return data


class MessageSerializer(serializers.Serializer):
    """A chat.conversations.selectors.MessageRecord."""

    id = serializers.IntegerField()
    role = serializers.CharField()
    content = serializers.CharField()
    state = serializers.ChoiceField(
        choices=Message.State.choices,
        help_text=(
            "`stopped`: its owner stopped it; `interrupted`: the server stopped while it ran "
            "(its process died); `failed`: it broke off. Each keeps the text that arrived."
        ),
    )
    created_at = serializers.DateTimeField()
    feed = serializers.JSONField(allow_null=True)
    replaces = serializers.IntegerField(
        allow_null=True, help_text="A regenerated answer: the id of the answer it replaces."
    )
    replaced_by = serializers.IntegerField(
        allow_null=True, help_text="An earlier version: the id of the answer that replaced it."
    )


class ConversationDetailSerializer(ConversationSerializer):
    """Its messages come in the context, as chat.conversations.selectors.message_records
    reads them."""

    messages = serializers.SerializerMethodField()

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "messages"]

    @extend_schema_field(MessageSerializer(many=True))
    def get_messages(self, conversation: Conversation) -> Any:
        return MessageSerializer(self.context["messages"], many=True).data


@extend_schema_field(
    {"type": "string", "minLength": 1, "maxLength": settings.GLASSBOX_MAX_MESSAGE_CHARS}
)
class QuestionField(StrictCharField):
    """Checked, with reasons people read, when the turn is admitted (chat.turns.admission);
    the schema states the limits."""


# The schema of the bodies chat.turns.actions reads (read_question, read_decision).
class TurnRequestSerializer(serializers.Serializer):
    """A question; a field not listed here is refused."""

    content = QuestionField(trim_whitespace=False)
    client_id = StrictUUIDField(required=False)


class ApprovalRequestSerializer(serializers.Serializer):
    """A decision; a field not listed here is refused."""

    decision = serializers.ChoiceField(choices=actions.DECISIONS)
    reason = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=actions.REASON_LIMIT,
        help_text="Why, for a denial.",
    )
    edited_arguments = serializers.DictField(
        required=False,
        help_text=(
            "With `approve`: the arguments to run instead of the ones the model asked for, "
            "checked against the tool's parameters, formats included (an invalid edit is a "
            '400 naming the argument: `{"edited_arguments": {"to": ["…"]}}`, and the '
            "call still waits). `feedback_to_user` is kept from the model's. The model is "
            "told what was changed."
        ),
    )
    fingerprint = StrictCharField(
        required=False,
        max_length=80,
        help_text=(
            "The fingerprint of the arguments as you saw them (`GET` of this URL): a call "
            "that no longer has it is a 409 and nothing is decided."
        ),
    )


class FeedbackRequestSerializer(serializers.Serializer):
    """A rating of an answer, or of one of its tool calls (the schema; chat.turns.actions
    reads the body)."""

    rating = serializers.ChoiceField(choices=["up", "down"])
    note = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=SCORE_NOTE_LIMIT,
        help_text="Why, if you like.",
    )
    call_id = StrictCharField(
        required=False,
        max_length=actions.CALL_ID_LIMIT,
        help_text="The tool call rated, as its `tool_call` event names it; none: the answer.",
    )


class ScoreSerializer(serializers.Serializer):
    """The rating as the feed records it (a `score` event). Rating again appends another;
    the latest counts."""

    type = serializers.CharField()
    seq = serializers.IntegerField(allow_null=True)
    call_id = serializers.CharField(help_text="Blank: the answer itself.")
    value = serializers.CharField(help_text="`up`, `down`, or blank for a label alone.")
    # A field named like Field.label: DRF takes it off the class, the stubs do not know.
    label = serializers.CharField()  # type: ignore[assignment]
    note = serializers.CharField()
    by = serializers.CharField()
    tool = serializers.CharField()
    at = serializers.DateTimeField()


class DecisionSerializer(serializers.Serializer):
    """The decision as the feed records it (a `decision` event)."""

    type = serializers.CharField()
    seq = serializers.IntegerField(allow_null=True)
    call_id = serializers.CharField()
    tool = serializers.CharField()
    decision = serializers.ChoiceField(choices=["approve", "deny", "timeout"])
    by = serializers.CharField()
    reason = serializers.CharField()
    waited_ms = serializers.IntegerField()
    fingerprint = serializers.CharField(
        help_text="SHA-256 over the RFC 8785 canonical JSON of the arguments decided on."
    )
    edited_arguments = serializers.DictField(
        allow_null=True, help_text="The arguments approved instead of the model's, if edited."
    )


class ApprovalReceiptSerializer(serializers.Serializer):
    """A call that asks first, as its card shows it."""

    call_id = serializers.CharField()
    tool = serializers.CharField()
    title = serializers.CharField(help_text="The tool's name for people, as it was when asked.")
    arguments = serializers.DictField()
    fingerprint = serializers.CharField(
        help_text="SHA-256 over the RFC 8785 canonical JSON of `arguments`."
    )
    parameters = serializers.DictField(allow_null=True)
    asked_at = serializers.DateTimeField()
    deadline = serializers.DateTimeField()
    decision = serializers.CharField(help_text="Blank while it waits.")
    decided_at = serializers.DateTimeField(allow_null=True)
    edited_arguments = serializers.DictField(allow_null=True)


class InboxItemSerializer(serializers.Serializer):
    """One thing that waits for you."""

    kind = serializers.CharField()
    conversation = serializers.UUIDField(source="conversation_id")
    conversation_title = serializers.CharField()
    title = serializers.CharField()
    deadline = serializers.DateTimeField()
    api_url = serializers.CharField()
