from __future__ import annotations

from collections import defaultdict

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.views import APIView

from activity.export import FORMATS, export_stream
from activity.models import ActivityEvent, ActivityFeed
from activity.selectors import feeds_filtered, feeds_visible_to
from chat.api.serializers import (
    ConversationDetailSerializer,
    ConversationSerializer,
    FeedSerializer,
)
from chat.models import Conversation
from chat.selectors import conversations_of

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
        messages = list(conversation.messages.select_related("feed").order_by("id"))
        rows = defaultdict(list)
        feed_ids = [m.feed_id for m in messages if m.feed_id]
        for event in ActivityEvent.objects.filter(feed_id__in=feed_ids).order_by("seq"):
            rows[event.feed_id].append(event)
        for message in messages:
            message.feed_rows = rows[message.feed_id]
            if message.feed_id:
                message.feed.username = self.request.user.get_username()
                message.feed.message_id = message.pk
        conversation.api_messages = messages
        return conversation


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
        rows = defaultdict(list)
        events = ActivityEvent.objects.filter(feed_id__in=[f.pk for f in page]).order_by("seq")
        for event in events:
            rows[event.feed_id].append(event)
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
