"""The conversations REST API; turns go through chat.turns like the socket's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import generics
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from activity.access import is_auditor
from activity.api.pagination import CheckedCursorPagination
from activity.models import FeedPreferences
from activity.recording.events import Decision, Error, to_json
from chat import turns
from chat.api.parsers import RequestParser
from chat.api.serializers import (
    ApprovalReceiptSerializer,
    ApprovalRequestSerializer,
    ConversationDetailSerializer,
    ConversationSerializer,
    DecisionSerializer,
    FeedbackRequestSerializer,
    InboxItemSerializer,
    MessageSerializer,
    ScoreSerializer,
    TurnRequestSerializer,
    edit_refusal,
    refusal,
)
from chat.api.sse import ProgramSseWire, first_error, sse, turn_events, wire_stream
from chat.asks.inbox import waiting_items
from chat.conversations.selectors import message_records
from chat.conversations.services import RatingRefused, answer_rate
from chat.models import Conversation, Message, ToolApproval
from chat.turns import actions
from chat.turns.datasets import DatasetFilters, adataset_lines
from chat.turns.recovery import dead_turns_recover
from project.openapi import documented
from project.text_rules import unstorable


class NewestFirst(CheckedCursorPagination):
    # By creation: a conversation's id is a random UUID.
    ordering = "-created_at"


def conversations_owned(user: Any) -> QuerySet[Conversation]:
    """Archived ones included, as the list shows them; deleted ones are gone."""
    return Conversation.objects.filter(owner=user)


class ConversationList(generics.ListCreateAPIView):
    serializer_class = ConversationSerializer
    parser_classes = [RequestParser]
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[Conversation]:
        first = Message.objects.filter(conversation=OuterRef("pk"), role=Message.Role.USER)
        # The title of an untitled conversation is its first question: read in the same query,
        # into the model's cached property of that name.
        return conversations_owned(
            self.request.user
        ).annotate(  # type: ignore[no-redef]
            first_question=Subquery(first.order_by("id").values("content")[:1])
        )

    def perform_create(self, serializer: Any) -> None:
        serializer.save(owner=self.request.user)


class ConversationDetail(APIView):
    @documented(responses=ConversationDetailSerializer)
    def get(self, request: Request, conversation_id: Any) -> Response:
        conversation = get_object_or_404(conversations_owned(request.user), pk=conversation_id)
        # Opening a conversation closes a turn whose process died.
        dead_turns_recover(conversation_id=conversation.pk)
        context = {"messages": message_records(conversation)}
        return Response(ConversationDetailSerializer(conversation, context=context).data)


class EventStreamRenderer(BaseRenderer):
    """Lets SSE clients negotiate; a refusal reaches them as one `error` event."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None):
        return sse(to_json(Error(first_error(data)))).encode()


@documented(
    request=TurnRequestSerializer,
    responses={
        (200, "application/json"): MessageSerializer,
        (200, "text/event-stream"): OpenApiTypes.STR,
    },
    description=(
        "Asks a question. With `Accept: text/event-stream` the turn's events stream as "
        "server-sent events (`turn`, then `status`, `tool_call`, `tool_result`, `text`, and "
        "`done`), as the owner's feed settings for programs choose (docs/feed.md: the page "
        "and programs); otherwise the answer is returned when it is complete. Repeating a "
        "`client_id` joins that turn instead of starting another."
    ),
)
class TurnCreate(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]
    parser_classes = [RequestParser]

    def post(self, request: Request, conversation_id: Any) -> Any:
        conversation = get_object_or_404(conversations_owned(request.user), pk=conversation_id)
        try:
            question = actions.read_question(request.data)
            # Begun on the server's event loop before the response starts: an admitted turn
            # runs whatever its client does next.
            # The owner's settings for programs, and their saved language.
            prefs, saved = FeedPreferences.settings_for(conversation.owner_id, "program")
            turn = async_to_sync(actions.perform)(
                question,
                conversation=conversation,
                user=request.user,
                # As on the pages: the saved choice, else the request's Accept-Language.
                language=saved or None,
            )
        except actions.Unreadable as problem:
            raise refusal(problem) from None
        except turns.QuestionInvalid as problem:
            raise ValidationError({"content": str(problem)}) from None
        except turns.TurnRejected as refused:
            response = Response({"detail": str(refused)}, status=refused.status)
            if isinstance(refused, turns.Restarting):
                response["Retry-After"] = "1"  # another process takes it
            return response
        assert isinstance(turn, turns.StartedTurn)
        if "text/event-stream" in request.headers.get("Accept", ""):
            wire = ProgramSseWire(prefs, turn.answer.pk, saved)
            lines = wire_stream(conversation, turn.answer.pk, wire, None)
            stream = StreamingHttpResponse(lines, content_type="text/event-stream")
            stream["Cache-Control"] = "no-cache"
            stream["X-Accel-Buffering"] = "no"
            return stream
        # Streamed too, as one document once the turn is over: no request thread waits for it.
        return StreamingHttpResponse(_answer(conversation, turn), content_type="application/json")


@documented(
    request=ApprovalRequestSerializer,
    responses=DecisionSerializer,
    parameters=[
        OpenApiParameter(
            "call_id",
            {"type": "string", "minLength": 1, "maxLength": actions.CALL_ID_LIMIT},
            OpenApiParameter.PATH,
            description="The tool call's id, as its `status` and `tool_call` events give it.",
        )
    ],
    description=(
        "Approves or denies a tool call that waits for this conversation's owner (its "
        "`status` event has `state` `waiting`). The first decision wins; a later one, or one "
        "after GLASSBOX_APPROVAL_TIMEOUT, is a 409. Approved, the tool runs and the turn goes "
        "on; denied, the model is told why and answers without it."
    ),
)
class ApprovalDecide(APIView):
    parser_classes = [RequestParser]

    @documented(
        request=None,
        responses=ApprovalReceiptSerializer,
        description=(
            "The call as its card shows it: the arguments that will run, their fingerprint "
            "(SHA-256 over their RFC 8785 canonical JSON), the tool's parameters an edit must "
            "fit, its deadline, and its decision once taken."
        ),
    )
    def get(self, request: Request, conversation_id: Any, call_id: str) -> Response:
        conversation = get_object_or_404(conversations_owned(request.user), pk=conversation_id)
        approval = get_object_or_404(ToolApproval.objects.of_call(conversation.pk, call_id)[:1])
        return Response(ApprovalReceiptSerializer(approval).data)

    def post(self, request: Request, conversation_id: Any, call_id: str) -> Response:
        conversation = get_object_or_404(conversations_owned(request.user), pk=conversation_id)
        try:
            decision = async_to_sync(actions.perform)(
                actions.read_decision(request.data, call_id=call_id),
                conversation=conversation,
                user=request.user,
                language=None,
            )
        except actions.Unreadable as problem:
            raise refusal(problem) from None
        except turns.EditRefused as refused:
            raise edit_refusal(refused) from None
        except turns.TurnRejected as refused:
            return Response({"detail": str(refused)}, status=refused.status)
        assert isinstance(decision, Decision)
        return Response(to_json(decision))


@documented(
    request=FeedbackRequestSerializer,
    responses={201: ScoreSerializer},
    description=(
        "Rates a finished answer of your conversation (👍 `up` / 👎 `down`), or one of its "
        "tool calls with `call_id`, with an optional note. The rating is appended to the "
        "answer's sealed feed as a `score` event; rating the same target again appends "
        "another, and the latest counts. An answer still running is a 409; a `call_id` the "
        "answer did not make is a 400; another user's answer is a 404."
    ),
)
class AnswerFeedback(APIView):
    parser_classes = [RequestParser]

    def post(self, request: Request, conversation_id: Any, message_id: int) -> Response:
        conversation = get_object_or_404(conversations_owned(request.user), pk=conversation_id)
        answer = get_object_or_404(
            conversation.messages.filter(role=Message.Role.ASSISTANT), pk=message_id
        )
        try:
            rate = actions.read_rating(request.data)
            score = answer_rate(
                user=request.user,
                answer=answer,
                rating=rate.rating,
                note=rate.note,
                call_id=rate.call_id,
            )
        except actions.Unreadable as problem:
            raise refusal(problem) from None
        except RatingRefused as refused:
            body = {refused.field: [str(refused)]} if refused.field else {"detail": str(refused)}
            return Response(body, status=refused.status)
        return Response(to_json(score), status=201)


DATASET_PARAMS = {"format", "since", "until", "rating", "label", "tool"}


def dataset_filters(params: Any) -> DatasetFilters:
    """The dataset's query, read as strictly as a request body: an unknown parameter, a
    format other than jsonl, a time that is not ISO 8601 or a rating that is not up or down
    is a 400 naming it."""
    unknown = sorted(set(params) - DATASET_PARAMS)
    if unknown:
        raise ValidationError({"detail": f"Unknown parameter: {unknown[0]}."})
    if params.get("format", "jsonl") != "jsonl":
        raise ValidationError({"format": ["The dataset is given as jsonl."]})
    times = {}
    for name in ("since", "until"):
        text = params.get(name)
        try:
            when = parse_datetime(text) if text is not None else None
        except ValueError:
            when = None
        if text is not None and when is None:
            raise ValidationError({name: ["Use an ISO 8601 date and time."]})
        times[name] = when if when is None or when.tzinfo else when.replace(tzinfo=UTC)
    rating = params.get("rating", "")
    if rating not in ("", "up", "down"):
        raise ValidationError({"rating": ["The rating must be up or down."]})
    texts = {name: params.get(name, "") for name in ("label", "tool")}
    for name, text in texts.items():
        if len(text) > 64 or unstorable(text):
            raise ValidationError({name: ["At most 64 characters of text."]})
    return DatasetFilters(
        since=times["since"],
        until=times["until"],
        rating=rating,
        label=texts["label"],
        tool=texts["tool"],
    )


@documented(
    parameters=[
        OpenApiParameter("format", str, enum=["jsonl"], description="Only jsonl."),
        OpenApiParameter("since", OpenApiTypes.DATETIME, description="Scored from."),
        OpenApiParameter("until", OpenApiTypes.DATETIME, description="Scored before."),
        OpenApiParameter("rating", str, enum=["up", "down"], description="A current rating."),
        OpenApiParameter("label", str, description="A current label."),
        OpenApiParameter("tool", str, description="A call of this tool."),
    ],
    responses={(200, "application/jsonl"): OpenApiTypes.STR},
    description=(
        "The eval dataset, streamed as JSON lines (docs/dataset.md): one record per rated or "
        "labelled answer or tool call. Auditors only."
    ),
)
class Dataset(APIView):
    def get(self, request: Request) -> StreamingHttpResponse:
        if not is_auditor(request.user):
            raise PermissionDenied()
        filters = dataset_filters(request.query_params)
        response = StreamingHttpResponse(adataset_lines(filters), content_type="application/jsonl")
        response["Content-Disposition"] = 'attachment; filename="glassbox-dataset.jsonl"'
        return response


async def _answer(conversation: Conversation, turn: turns.StartedTurn) -> AsyncIterator[bytes]:
    async for _ in turn_events(conversation, turn):
        pass
    (answer,) = await sync_to_async(message_records)(conversation, answer=turn.answer.pk)
    yield JSONRenderer().render(MessageSerializer(answer).data)


@documented(
    responses=InboxItemSerializer(many=True),
    description=(
        "Everything that waits for you across your conversations (tool calls to approve), "
        "the nearest deadline first; each is answered at its `api_url`."
    ),
)
class Inbox(APIView):
    def get(self, request: Request) -> Response:
        return Response(InboxItemSerializer(waiting_items(request.user), many=True).data)
