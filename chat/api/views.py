from __future__ import annotations

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from activity.export import FORMATS, export_stream
from activity.models import ActivityFeed, FeedPreferences
from activity.selectors import events_by_feed, feeds_filtered, feeds_visible_to
from chat.api.serializers import (
    ConversationDetailSerializer,
    ConversationSerializer,
    FeedSerializer,
    MessageSerializer,
    TurnRequestSerializer,
)
from chat.api.turn_stream import sse, turn_events
from chat.models import Conversation
from chat.selectors import conversations_of
from chat.services import QuestionInvalid, TurnRejected, question_clean, turn_start

FEED_FILTERS = [
    OpenApiParameter("conversation", OpenApiTypes.UUID, description="one conversation"),
    OpenApiParameter("tool", str, description="feeds that called this tool"),
    OpenApiParameter("state", str, enum=list(ActivityFeed.State.values)),
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="started at or after"),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="started before"),
    OpenApiParameter("user", str, description="a username (staff only)"),
]


class NewestFirst(CursorPagination):
    ordering = "-id"
    page_size = 50


class ConversationList(generics.ListCreateAPIView):
    serializer_class = ConversationSerializer
    pagination_class = NewestFirst

    def get_queryset(self):
        return Conversation.objects.filter(owner=self.request.user)

    def perform_create(self, serializer):
        serializer.save(owner=self.request.user)


class ConversationDetail(generics.RetrieveAPIView):
    serializer_class = ConversationDetailSerializer
    lookup_url_kwarg = "conversation_id"

    def get_object(self):
        conversation = get_object_or_404(
            conversations_of(self.request.user), pk=self.kwargs["conversation_id"]
        )
        conversation.api_messages = self.with_feeds(conversation, self.request.user)
        return conversation

    @staticmethod
    def with_feeds(conversation, user, answer: int | None = None):
        """The conversation's messages (or one answer) with their feeds' events attached."""
        messages = conversation.messages.select_related("feed").order_by("id")
        if answer is not None:
            messages = messages.filter(pk=answer)
        messages = list(messages)
        rows = events_by_feed(m.feed_id for m in messages)
        for message in messages:
            message.feed_rows = rows[message.feed_id]
            if message.feed_id:
                message.feed.username = user.get_username()
                message.feed.message_id = message.pk
        return messages[0] if answer is not None else messages


def filtered_feeds(request: Request):
    params = request.query_params
    since, until = (_when(params, name) for name in ("since", "until"))
    username = params.get("user", "")
    if username and not request.user.is_staff:
        raise ValidationError({"user": "Only staff can see other users' feeds."})
    conversation = params.get("conversation") or None
    if conversation:
        try:
            conversation = serializers.UUIDField().to_internal_value(conversation)
        except ValidationError:
            raise ValidationError({"conversation": "Must be a conversation's UUID."}) from None
    state = params.get("state", "")
    if state and state not in ActivityFeed.State.values:
        raise ValidationError({"state": f"Must be one of {', '.join(ActivityFeed.State.values)}."})
    return feeds_filtered(
        feeds_visible_to(request.user),
        conversation=conversation,
        tool=params.get("tool", ""),
        state=state,
        since=since,
        until=until,
        username=username,
    )


def _when(params, name):
    value = params.get(name)
    if not value:
        return None
    parsed = parse_datetime(value)
    if parsed is None:
        raise ValidationError({name: "Use an ISO 8601 date and time, e.g. 2026-11-01T00:00:00Z."})
    return parsed


@extend_schema(parameters=FEED_FILTERS)
class FeedList(generics.ListAPIView):
    serializer_class = FeedSerializer
    pagination_class = NewestFirst

    def get_queryset(self):
        return filtered_feeds(self.request)

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        rows = events_by_feed(feed.pk for feed in page)
        for feed in page:
            feed.prefetched_events = rows[feed.pk]
        return page


class FeedDetail(generics.RetrieveAPIView):
    serializer_class = FeedSerializer

    def get_queryset(self):
        return feeds_visible_to(self.request.user)


@extend_schema(
    parameters=[
        OpenApiParameter("format", str, enum=list(FORMATS), default="ndjson"),
        *FEED_FILTERS,
    ],
    responses={(200, media): OpenApiTypes.STR for media in FORMATS.values()},
)
class FeedExport(APIView):
    """Every matching feed with its events, streamed: NDJSON (a feed per line), CSV (an event
    per row, safe to open in a spreadsheet) or one JSON array."""

    def get(self, request):
        fmt = request.query_params.get("format", "ndjson")
        if fmt not in FORMATS:
            raise ValidationError({"format": f"Must be one of {', '.join(FORMATS)}."})
        feeds = filtered_feeds(request)
        response = StreamingHttpResponse(export_stream(feeds, fmt), content_type=FORMATS[fmt])
        extension = "json" if fmt == "json" else fmt
        response["Content-Disposition"] = f'attachment; filename="glassbox-feeds.{extension}"'
        return response


class EventStreamRenderer(BaseRenderer):
    """Lets SSE clients negotiate; an error reaches them as one `error` event."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return sse({"type": "error", **(data or {})}).encode()


@extend_schema(
    request=TurnRequestSerializer,
    responses={
        (200, "application/json"): MessageSerializer,
        (200, "text/event-stream"): OpenApiTypes.STR,
    },
    description=(
        "Asks a question. With `Accept: text/event-stream` the turn's events stream as "
        "server-sent events (`turn`, then `status`, `tool_call`, `tool_result`, `text`, and "
        "`done`); otherwise the answer is returned when it is complete. Repeating a `client_id` "
        "joins that turn instead of starting another."
    ),
)
class TurnCreate(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    def post(self, request, conversation_id):
        conversation = get_object_or_404(
            Conversation.objects.filter(owner=request.user), pk=conversation_id
        )
        data = TurnRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            text = question_clean(data.validated_data["content"])
            turn = turn_start(
                conversation=conversation,
                text=text,
                client_id=data.validated_data.get("client_id"),
                # As on the pages: the saved choice, else the request's Accept-Language.
                language=FeedPreferences.language_of(request.user.pk) or None,
            )
        except QuestionInvalid as problem:
            raise ValidationError({"content": str(problem)}) from None
        except TurnRejected as refusal:
            return Response({"detail": str(refusal)}, status=refusal.status)
        events = turn_events(conversation, turn)
        if "text/event-stream" in request.headers.get("Accept", ""):
            response = StreamingHttpResponse(
                (sse(event) async for event in events), content_type="text/event-stream"
            )
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"
            return response
        async_to_sync(_drain)(events)
        answer = ConversationDetail.with_feeds(conversation, request.user, answer=turn.answer.pk)
        return Response(MessageSerializer(answer).data)


async def _drain(events) -> None:
    async for _ in events:
        pass
