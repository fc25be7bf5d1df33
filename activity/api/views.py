"""The feeds REST API: list, detail and a streamed export, scoped by activity.selectors."""

from __future__ import annotations

import datetime
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import generics, serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from activity.access import is_auditor
from activity.api.pagination import CheckedCursorPagination
from activity.auditing.export import (
    FORMATS,
    FeedData,
    export_response,
    feed_data,
    model_calls_data,
)
from activity.models import ActivityFeed
from activity.preferences.feed_prefs import FeedPrefs
from activity.recording.events import SCORE_NOTE_LIMIT, to_json
from activity.selectors import events_by_feed, feeds_filtered, feeds_visible_to
from activity.writing.labels import LabelRefused, label_call
from project.openapi import documented

# Parameters whose empty value would mean nothing (a date, an id, a choice).
NOT_EMPTY = {"since", "until", "conversation", "state", "format"}

# Text filters hold no NUL (no database can search for one): said in the schema, refused (400).
NO_NUL = "^[^\\x00]*$"
FEED_FILTERS = [
    OpenApiParameter("conversation", OpenApiTypes.UUID, description="one conversation"),
    OpenApiParameter("tool", str, description="feeds that called this tool", pattern=NO_NUL),
    OpenApiParameter("state", str, enum=list(ActivityFeed.State.values)),
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="started at or after"),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="started before"),
    OpenApiParameter(
        "user",
        str,
        description="a username (auditors only: active staff with activity.view_activityfeed)",
        pattern=NO_NUL,
    ),
]


class SummarySerializer(serializers.Serializer):
    icon = serializers.CharField()
    text = serializers.CharField()


class TokensSerializer(serializers.Serializer):
    """Null is unknown: the provider did not say."""

    model = serializers.CharField()
    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    reasoning_tokens = serializers.IntegerField(allow_null=True)
    cached_tokens = serializers.IntegerField(allow_null=True)
    cost = serializers.DecimalField(
        max_digits=14, decimal_places=6, allow_null=True, help_text="In GLASSBOX_CURRENCY."
    )


class UsageSerializer(TokensSerializer):
    total_tokens = serializers.IntegerField(allow_null=True)


class ModelCallSerializer(TokensSerializer):
    round = serializers.IntegerField()
    duration_ms = serializers.IntegerField()
    thinking_ms = serializers.IntegerField(allow_null=True)
    reasoning = serializers.CharField(
        required=False,
        help_text="The model's reasoning: for auditors, and for everyone when the site "
        "shows it (GLASSBOX_SHOW_REASONING=full).",
    )


class FeedSerializer(serializers.Serializer):
    """A feed with its events in the live protocol: activity.auditing.export.FeedData, given
    as it is (the fields are declared for the schema)."""

    id = serializers.IntegerField()
    conversation = serializers.UUIDField(allow_null=True)
    message = serializers.IntegerField(allow_null=True)
    user = serializers.CharField()
    state = serializers.ChoiceField(choices=ActivityFeed.State.choices)
    summary = SummarySerializer()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    duration_ms = serializers.IntegerField(allow_null=True)
    tool_call_count = serializers.IntegerField()
    failed_tool_count = serializers.IntegerField()
    usage = UsageSerializer()
    model_calls = ModelCallSerializer(
        many=True, required=False, help_text="Each request to the model (one feed's page only)."
    )
    events = serializers.ListField(
        child=serializers.DictField(),
        help_text="The feed's events, as the live protocol has them.",
    )

    def to_representation(self, instance: FeedData) -> dict[str, Any]:
        return dict(instance)


class NewestFeedsFirst(CheckedCursorPagination):
    ordering = "-id"


def filtered_feeds(request: Request) -> QuerySet[ActivityFeed]:
    params = request.query_params
    for name, value in params.items():
        if "\x00" in value:
            raise ValidationError({name: "A NUL character cannot be searched for."})
        if not value and name in NOT_EMPTY:
            raise ValidationError({name: "Give a value, or leave the parameter out."})
    since, until = (_when(params, name) for name in ("since", "until"))
    username = params.get("user", "")
    if username and not is_auditor(request.user):
        raise PermissionDenied(
            "The user filter is for auditors: active staff with the "
            "activity.view_activityfeed permission."
        )
    conversation = None
    if params.get("conversation"):
        try:
            conversation = serializers.UUIDField().to_internal_value(params["conversation"])
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


def _when(params: Any, name: str) -> Any:
    value = params.get(name)
    if value is None:
        return None
    try:
        parsed = parse_datetime(value)
        if parsed is not None:
            # A time without a zone is the server's; every time must exist in UTC as well.
            if timezone.is_naive(parsed):
                parsed = timezone.make_aware(parsed)
            parsed.astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        parsed = None
    if parsed is None:
        raise ValidationError({name: "Use an ISO 8601 date and time, e.g. 2026-11-01T00:00:00Z."})
    return parsed


@documented(parameters=FEED_FILTERS)
class FeedList(generics.ListAPIView):
    serializer_class = FeedSerializer
    pagination_class = NewestFeedsFirst

    def get_queryset(self) -> QuerySet[ActivityFeed]:
        return filtered_feeds(self.request)

    def paginate_queryset(self, queryset: Any) -> Any:
        """The page's feeds as FeedData, their events read in one query."""
        page = super().paginate_queryset(queryset)
        if page is None:
            return None
        rows = events_by_feed(feed.pk for feed in page)
        return [feed_data(feed, rows[feed.pk]) for feed in page]


class FeedDetail(generics.RetrieveAPIView):
    serializer_class = FeedSerializer

    def get_queryset(self) -> QuerySet[ActivityFeed]:
        return feeds_visible_to(self.request.user)

    def get_object(self) -> Any:
        """The feed as FeedData, which FeedSerializer gives as it is."""
        feed = super().get_object()
        data = feed_data(feed, feed.events.order_by("seq"))
        readable = (
            is_auditor(self.request.user)
            or FeedPrefs.from_mappings(settings.GLASSBOX_FEED).show_reasoning == "full"
        )
        data["model_calls"] = model_calls_data(
            feed.model_calls.order_by("round"), reasoning=readable
        )
        return data


@documented(
    parameters=[
        OpenApiParameter("format", str, enum=list(FORMATS), default="ndjson"),
        *FEED_FILTERS,
    ],
    responses={
        (200, media): FeedSerializer(many=True) if fmt == "json" else OpenApiTypes.STR
        for fmt, media in FORMATS.items()
    },
)
class FeedExport(APIView):
    """Every matching feed with its events, streamed: NDJSON (a feed per line), CSV (an event
    per row, safe to open in a spreadsheet) or one JSON array."""

    def get(self, request: Request) -> StreamingHttpResponse:
        fmt = request.query_params.get("format", "ndjson")
        if fmt not in FORMATS:
            raise ValidationError({"format": f"Must be one of {', '.join(FORMATS)}."})
        return export_response(filtered_feeds(request), fmt)


class LabelRequestSerializer(serializers.Serializer):
    """An auditor's label of one tool call of this feed (the schema; the view reads the body
    strictly: an unknown field or a wrong type is a 400)."""

    call_id = serializers.CharField(max_length=64)
    # A field named like Field.label: DRF takes it off the class, the stubs do not know.
    label = serializers.CharField(  # type: ignore[assignment]
        help_text="One of GLASSBOX_SCORE_LABELS (by default: correct, wrong tool, wrong "
        "arguments, unsafe, should have asked, hallucinated result)."
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=SCORE_NOTE_LIMIT)


LABEL_FIELDS = {"call_id", "label", "note"}


@documented(
    request=LabelRequestSerializer,
    responses={201: OpenApiTypes.OBJECT},
    description=(
        "Labels one tool call of a finished feed (auditors only) with one of "
        "GLASSBOX_SCORE_LABELS and an optional note: appended to the feed as a sealed "
        "`score` event (its JSON form is the answer). A later label by the same auditor "
        "counts instead. A running feed is a 409, a call the feed did not make a 404."
    ),
)
class FeedLabels(APIView):
    def post(self, request: Request, pk: int) -> Response:
        if not is_auditor(request.user):
            raise PermissionDenied()
        feed = get_object_or_404(ActivityFeed, pk=pk)
        body = request.data
        if not isinstance(body, dict):
            raise ValidationError({"detail": "Expected a JSON object."})
        if unknown := sorted(set(body) - LABEL_FIELDS):
            raise ValidationError({"detail": f"Unknown field: {unknown[0]}."})
        for name in LABEL_FIELDS:
            if name in body and not isinstance(body[name], str):
                raise ValidationError({name: ["Must be text."]})
        try:
            score = label_call(
                user=request.user,
                feed_id=feed.pk,
                call_id=body.get("call_id", ""),
                label=body.get("label", ""),
                note=body.get("note", ""),
            )
        except LabelRefused as refused:
            body = {refused.field or "detail": [str(refused)]}
            return Response(body, status=refused.status)
        return Response(to_json(score), status=201)
