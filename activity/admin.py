"""Read-only audit of every feed and tool call, an export action, and a small dashboard."""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import UTC, timedelta
from typing import Any, assert_never

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Max, Min, OuterRef, Q, Subquery, Sum
from django.db.models.functions import TruncDate
from django.http import Http404, HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from activity import telemetry
from activity.access import is_auditor
from activity.auditing.audit import evidence_stream, feed_integrity, period
from activity.auditing.export import export_response
from activity.models import (
    ActivityEvent,
    ActivityFeed,
    ChainReseal,
    FeedPreferences,
    LedgerEntry,
    ModelCall,
    ToolCallRecord,
)
from activity.recording.events import (
    SCORE_NOTE_LIMIT,
    AppNote,
    AppView,
    Decision,
    Plan,
    Score,
    Status,
    ToolCall,
    ToolLog,
    ToolResult,
)
from activity.writing.labels import LabelRefused, label_call
from project.read_only_admin import RecordAdmin


class ReadOnlyAdmin(RecordAdmin):
    """Audit data: read by auditors only (activity.access.is_auditor, as the API and the
    exports), never added, changed or deleted through admin, by anyone."""

    def has_view_permission(self, request, obj=None):
        return is_auditor(request.user)


class ToolFilter(admin.SimpleListFilter):
    title = "tool"
    parameter_name = "tool"

    def lookups(self, request, model_admin):
        tools = (
            ActivityEvent.objects.filter(kind=ActivityEvent.Kind.TOOL_CALL)
            .order_by("tool")
            .values_list("tool", flat=True)
            .distinct()
        )
        return [(tool, tool) for tool in tools]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        if queryset.model is ActivityFeed:
            calls = ActivityEvent.objects.filter(kind="tool_call", tool=self.value())
            return queryset.filter(pk__in=calls.values("feed_id"))
        return queryset.filter(tool=self.value())


class ServerFilter(admin.SimpleListFilter):
    """The MCP server a tool came from; "built-in" for Glassbox's own tools."""

    title = "MCP server"
    parameter_name = "server"
    BUILT_IN = "-"

    def lookups(self, request, model_admin):
        servers = (
            ActivityEvent.objects.filter(kind=ActivityEvent.Kind.TOOL_RESULT)
            .exclude(server="")
            .order_by("server")
            .values_list("server", flat=True)
            .distinct()
        )
        return [(self.BUILT_IN, "built-in"), *((server, server) for server in servers)]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(server="" if value == self.BUILT_IN else value)


class DecisionFilter(admin.SimpleListFilter):
    """Feeds by what their owner decided on a call that asked first."""

    title = "approval"
    parameter_name = "decision"
    CHOICES = {"approve": "approved", "deny": "denied", "timeout": "timed out"}

    def lookups(self, request, model_admin):
        return list(self.CHOICES.items())

    def queryset(self, request, queryset):
        if self.value() not in self.CHOICES:
            return queryset
        decided = ActivityEvent.objects.filter(
            kind=ActivityEvent.Kind.DECISION, state=self.value()
        ).values("feed_id")
        return queryset.filter(pk__in=decided)


def _scores_of_call(kind: str) -> Any:
    """A tool call's latest score of this kind (a rating or a label), for its row."""
    scores = ActivityEvent.objects.filter(
        kind=ActivityEvent.Kind.SCORE, feed_id=OuterRef("feed_id"), call_id=OuterRef("call_id")
    )
    column = "state" if kind == "rating" else "result_summary"
    return Subquery(scores.exclude(**{column: ""}).order_by("-seq").values(column)[:1])


class LabelFilter(admin.SimpleListFilter):
    title = "label"
    parameter_name = "label"

    def lookups(self, request, model_admin):
        return [(label, label) for label in settings.GLASSBOX_SCORE_LABELS]

    def queryset(self, request, queryset):
        return queryset.filter(label=self.value()) if self.value() else queryset


class RatingFilter(admin.SimpleListFilter):
    title = "rating"
    parameter_name = "rating"

    def lookups(self, request, model_admin):
        return [("up", "👍 up"), ("down", "👎 down")]

    def queryset(self, request, queryset):
        return queryset.filter(rating=self.value()) if self.value() else queryset


class ModelFilter(admin.SimpleListFilter):
    title = "model"
    parameter_name = "model"

    def lookups(self, request, model_admin):
        models = ActivityFeed.objects.exclude(model="").order_by("model")
        return [(name, name) for name in models.values_list("model", flat=True).distinct()]

    def queryset(self, request, queryset):
        return queryset.filter(feed__model=self.value()) if self.value() else queryset


class LabelForm(forms.Form):
    label = forms.ChoiceField(choices=())
    note = forms.CharField(required=False, max_length=SCORE_NOTE_LIMIT, widget=forms.Textarea)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Read per form: the labels are a setting.
        choice = self.fields["label"]
        assert isinstance(choice, forms.ChoiceField)
        choice.choices = [(x, x) for x in settings.GLASSBOX_SCORE_LABELS]


class DurationFilter(admin.SimpleListFilter):
    title = "duration"
    parameter_name = "took"
    BUCKETS = {
        "fast": ("under 100 ms", Q(duration_ms__lt=100)),
        "normal": ("100 ms – 1 s", Q(duration_ms__gte=100, duration_ms__lt=1000)),
        "slow": ("1 – 5 s", Q(duration_ms__gte=1000, duration_ms__lt=5000)),
        "very_slow": ("5 s or more", Q(duration_ms__gte=5000)),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in self.BUCKETS.items()]

    def queryset(self, request, queryset):
        value = self.value()
        if value in self.BUCKETS:
            return queryset.filter(self.BUCKETS[value][1])
        return queryset


class ReadOnlyInline(admin.TabularInline):
    """Rows of a feed, shown as they were recorded; nobody edits them."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ActivityEventInline(ReadOnlyInline):
    model = ActivityEvent
    fields = (
        "seq", "kind", "what", "icon", "message", "state", "tool", "call_id", "arguments", "ok",
        "result_summary", "error", "duration_ms", "created_at",
    )  # fmt: skip
    readonly_fields = fields
    ordering = ["seq"]

    @admin.display(description="what")
    def what(self, row: ActivityEvent) -> str:
        """The event in one line, as it reads back (its columns are beside it)."""
        try:
            event = row.to_event()
        except (KeyError, ValueError, TypeError):
            return "unreadable: see its chain"
        match event:
            case Status():
                return f"{event.icon} {event.message} ({event.state})"
            case ToolCall():
                return f"call {event.tool}"
            case ToolResult():
                return f"{'ok' if event.ok else 'failed'}: {event.summary}"
            case Decision():
                return f"{event.decision} by {event.by}" if event.by else event.decision
            case Plan():
                return f"plan: {event.done} of {len(event.steps)} steps done"
            case ToolLog():
                source = f" {event.logger}" if event.logger else ""
                return f"log {event.level}{source}: {event.data}"
            case Score():
                judged = ", ".join(filter(None, (event.value, event.label)))
                return f"score {judged} by {event.by}" if event.by else f"score {judged}"
            case AppView():
                return f"app {event.uri} (sha256 {event.sha256})"
            case AppNote():
                return f"from the app ({event.note}): {event.text}"
            case _:
                assert_never(event)


class ModelCallInline(ReadOnlyInline):
    """Each request to the model: its usage, and the reasoning admins always see."""

    model = ModelCall
    fields = (
        "round", "model", "duration_ms", "thinking_ms", "prompt_tokens", "completion_tokens",
        "reasoning_tokens", "cached_tokens", "cost", "reasoning",
    )  # fmt: skip
    readonly_fields = fields
    ordering = ["round"]


@admin.action(description="Export selected feeds as NDJSON")
def export_ndjson(modeladmin, request, queryset):
    return _export(queryset, "ndjson")


@admin.action(description="Export selected feeds as CSV")
def export_csv(modeladmin, request, queryset):
    return _export(queryset, "csv")


@admin.action(description="Export evidence for the selected feeds (NDJSON, with hashes)")
def export_evidence(modeladmin, request, queryset):
    """The selection as manage.py export_evidence gives it, with a period that the command
    reproduces: [the first start, just after the last start), its `until` exclusive as the
    command's is. A selection that is not every feed of that period says so."""
    span = queryset.aggregate(since=Min("started_at"), last=Max("started_at"), feeds=Count("pk"))
    since, last = span["since"], span["last"]
    until = None if last is None else last + timedelta(microseconds=1)
    selection = ""
    if since is not None and (every := period(since, until).count()) != span["feeds"]:
        selection = f"{span['feeds']} selected of the {every} feeds begun in the period"
    response = StreamingHttpResponse(
        evidence_stream(
            queryset.select_related("owner"), since=since, until=until, selection=selection
        ),
        content_type="application/x-ndjson",
    )
    response["Content-Disposition"] = 'attachment; filename="glassbox-evidence.ndjson"'
    return response


def _export(queryset, fmt: str):
    feeds = queryset.annotate(username=F("owner__username"), message_id=F("message__id"))
    return export_response(feeds, fmt)


@admin.register(ActivityFeed)
class ActivityFeedAdmin(ReadOnlyAdmin):
    list_display = [
        "id", "owner", "conversation_link", "state", "summary", "tool_call_count",
        "failed_tool_count", "model", "total_tokens", "reasoning_tokens", "cost", "took",
        "opened_count", "started_at",
    ]  # fmt: skip
    list_filter = [
        "state", ToolFilter, DecisionFilter, ("owner", admin.RelatedOnlyFieldListFilter), "model",
        "started_at",
    ]  # fmt: skip
    list_select_related = ["owner"]
    search_fields = ["owner__username", "summary_text", "events__message", "events__tool"]
    date_hierarchy = "started_at"
    show_full_result_count = False
    inlines = [ActivityEventInline, ModelCallInline]
    actions = [export_ndjson, export_csv, export_evidence]
    readonly_fields = ["conversation_link", "message_link", "took", "integrity", "trace_id"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(message_id=F("message__id"))

    def get_search_results(self, request, queryset, search_term):
        # Searching through events joins many rows per feed; show each feed once. Without a
        # search, no DISTINCT: counting and dating a distinct set read every feed whole
        # (bench/history_scale.py: seconds at 160,000 feeds).
        queryset, _ = super().get_search_results(request, queryset, search_term)
        return (queryset.distinct() if search_term else queryset), False

    @admin.display(description="summary")
    def summary(self, feed):
        return f"{feed.summary_icon} {feed.summary_text}".strip()

    @admin.display(description="took")
    def took(self, feed):
        return "running" if feed.duration_ms is None else f"{feed.duration_ms / 1000:.1f} s"

    @admin.display(description="integrity")
    def integrity(self, feed):
        """Its hash chain, checked as the page is read (manage.py verify_audit checks all)."""
        checked = feed_integrity(feed)
        if checked.intact:
            text = f"✔ intact: {checked.check.events} events, head {checked.check.head[:16]}…"
            if checked.sealed:
                text += f", closed {feed.closing[:16]}… (its record, model calls and text)"
        else:
            text = f"✘ BROKEN: {checked.problem()}"
        for reseal in feed.reseals.all():
            text += f" (resealed {reseal.at:%Y-%m-%d %H:%M} UTC: {reseal.reason})"
        return text

    @admin.display(description="trace id")
    def trace_id(self, feed):
        """The OpenTelemetry trace this turn is sent as (derived from the feed, so a turn
        sent live and again by `manage.py export_otel` is one trace)."""
        return telemetry.trace_id_hex(feed.pk, feed.started_at)

    @admin.display(description="conversation")
    def conversation_link(self, feed):
        if feed.conversation_id is None:
            return "—"
        url = reverse("admin:chat_conversation_change", args=[feed.conversation_id])
        return format_html('<a href="{}">{}</a>', url, str(feed.conversation_id)[:8])

    @admin.display(description="message")
    def message_link(self, feed):
        if not getattr(feed, "message_id", None):
            return "—"
        url = reverse("admin:chat_message_change", args=[feed.message_id])
        return format_html('<a href="{}">message {}</a>', url, feed.message_id)

    def get_urls(self):
        dashboard = self.admin_site.admin_view(self.dashboard)
        return [path("dashboard/", dashboard, name="activity_dashboard"), *super().get_urls()]

    def dashboard(self, request):
        # Every user's tool calls: for auditors, as the feed list itself.
        if not self.has_view_permission(request):
            raise PermissionDenied
        return TemplateResponse(
            request,
            "admin/activity/dashboard.html",
            {**self.admin_site.each_context(request), "title": "Tool calls", **tool_stats()},
        )


def tool_stats(days: int = 30) -> dict:
    """Calls per day and, per tool, failure rate and p50/p95 duration, for the last days."""
    since = timezone.now() - timedelta(days=days)
    results = ActivityEvent.objects.filter(kind="tool_result", created_at__gte=since)
    per_day = list(
        results.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(calls=Count("id"), failed=Count("id", filter=Q(ok=False)))
        .order_by("day")
    )
    durations: dict[tuple[str, str], list[int]] = defaultdict(list)
    failures: dict[tuple[str, str], int] = defaultdict(int)
    # In no order: the events' own (by feed, newest first) joined every feed to sort them.
    rows = results.order_by().values_list("server", "tool", "ok", "duration_ms").iterator()
    for server, tool, ok, duration in rows:
        durations[server, tool].append(duration or 0)
        failures[server, tool] += not ok
    servers: dict[str, list[dict]] = defaultdict(list)
    # Built-in tools first, then each MCP server's, each group by tool name.
    for (server, tool), values in sorted(durations.items()):
        values.sort()
        servers[server].append(
            {
                "tool": tool,
                "calls": len(values),
                "failure_rate": failures[server, tool] / len(values),
                "p50": _percentile(values, 50),
                "p95": _percentile(values, 95),
            }
        )
    groups = [
        {
            "server": server or "built-in",
            "calls": sum(row["calls"] for row in rows_),
            "tools": rows_,
        }
        for server, rows_ in servers.items()
    ]
    tools = [row for group in groups for row in group["tools"]]
    peak = max((day["calls"] for day in per_day), default=0)
    return {
        "per_day": per_day,
        "peak": peak,
        "tools": tools,
        "servers": groups,
        "days": days,
        **token_stats(since),
        **opened_stats(since),
        **score_stats(since),
    }


# The labels' colours on the chart, in the order of GLASSBOX_SCORE_LABELS (then again).
LABEL_COLOURS = ("#2e7d32", "#ef6c00", "#6a1b9a", "#ba2121", "#00838f", "#795548", "#546e7a")
LABEL_CHART_HEIGHT = 120


TREND_HEIGHT = 28


def score_stats(since) -> dict:
    """Per tool and per model: calls, how many were rated, the share rated 👎 and the labels
    (each person's latest score of a call counts), in all and per day as a small chart; and
    the labels given per day, as stacked bars (server-drawn SVG: the admin's CSP runs no
    inline script)."""
    calls = ActivityEvent.objects.filter(
        kind=ActivityEvent.Kind.TOOL_RESULT, created_at__gte=since
    )
    calls_per_day = (
        calls.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values_list("tool", "feed__model", "day")
        .annotate(n=Count("id"))
        .order_by()
    )
    scores = (
        ActivityEvent.objects.filter(kind=ActivityEvent.Kind.SCORE, created_at__gte=since)
        .exclude(call_id="")
        .order_by("feed_id", "seq")
        .values_list(
            "feed_id", "call_id", "tool", "state", "result_summary", "arguments", "message",
            "created_at", "feed__model",
        )
    )  # fmt: skip
    ratings: dict[tuple, tuple[str, str, str, Any]] = {}
    labels: dict[tuple, tuple[str, str, str, Any]] = {}
    for feed_id, call_id, tool, value, label, arguments, by, at, model in scores.iterator():
        person = (feed_id, call_id, (arguments or {}).get("by_id") or by)
        day = at.astimezone(UTC).date()
        if value:
            ratings[person] = (tool, model, value, day)
        if label:
            labels[person] = (tool, model, label, day)

    names = list(settings.GLASSBOX_SCORE_LABELS)
    names += sorted({given[2] for given in labels.values()} - set(names))
    colours = {name: LABEL_COLOURS[i % len(LABEL_COLOURS)] for i, name in enumerate(names)}
    first = since.astimezone(UTC).date()
    span = [first + timedelta(days=n) for n in range((timezone.now().date() - first).days + 1)]

    def table(index: int) -> list[dict]:
        rows: dict[str, dict] = {}

        def row_of(name: str) -> dict:
            blank = {"name": name, **_day_counts(), "days": defaultdict(_day_counts)}
            return rows.setdefault(name, blank)

        for *names_of, day, n in calls_per_day:
            row = row_of(names_of[index])
            row["calls"] += n
            row["days"][day]["calls"] += n
        for rating in ratings.values():
            row = row_of(rating[index])
            day = row["days"][rating[3]]
            for counts in (row, day):
                counts["rated"] += 1
                counts["down"] += rating[2] == "down"
        for given in labels.values():
            row = row_of(given[index])
            row["labels"][given[2]] += 1
            row["days"][given[3]]["labels"][given[2]] += 1
        return [
            row
            | {
                "down_rate": row["down"] / row["rated"] if row["rated"] else None,
                "labels": sorted(row["labels"].items()),
                "trend": _trend(span, row["days"], colours),
            }
            for _, row in sorted(rows.items())
        ]

    per_day: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for _, _, label, day in labels.values():
        per_day[day][label] += 1
    peak = max((sum(counts.values()) for counts in per_day.values()), default=0)
    days = []
    for day, counts in sorted(per_day.items()):
        top, bars = 130, []
        for name in names:
            if counts.get(name):
                height = round(LABEL_CHART_HEIGHT * counts[name] / peak)
                top -= height
                bars.append({"label": name, "count": counts[name], "y": top, "height": height,
                             "colour": colours[name]})  # fmt: skip
        days.append({"day": day, "total": sum(counts.values()), "bars": bars})
    return {
        "score_tables": [("tool", table(0)), ("model", table(1))],
        "trend_width": 4 * len(span),
        "labels_per_day": days,
        "labels_peak": peak,
        "label_colours": [{"label": name, "colour": colours[name]} for name in names],
    }


def _day_counts() -> dict:
    """A row's counts, in all or on one day."""
    return {"calls": 0, "rated": 0, "down": 0, "labels": defaultdict(int)}


def _trend(span: list, days: dict, colours: dict[str, str]) -> list[dict]:
    """One column a day: a bar of the calls (to the row's busiest day), its 👎 share of the
    rated in red from the bottom, and a strip in the colour of the day's most given label."""
    peak = max((days[day]["calls"] for day in span if day in days), default=0)
    columns = []
    for x, day in enumerate(span):
        counts = days.get(day)
        if counts is None:
            continue
        height = round(TREND_HEIGHT * counts["calls"] / peak) if peak else 0
        if counts["calls"]:
            height = max(height, 1)
        down = round(height * counts["down"] / counts["rated"]) if counts["rated"] else 0
        given = sorted(counts["labels"].items(), key=lambda item: (-item[1], item[0]))
        columns.append(
            {
                "day": day,
                "x": 4 * x,
                "calls": counts["calls"],
                "rated": counts["rated"],
                "down": counts["down"],
                "labels": given,
                "bar_y": TREND_HEIGHT - height,
                "bar_height": height,
                "down_y": TREND_HEIGHT - down,
                "down_height": down,
                "label_colour": colours[given[0][0]] if given else "",
            }
        )
    return columns


def opened_stats(since) -> dict:
    """Seed 002's next step: how often a folded feed is expanded, per day and per tool. Only
    finished feeds that had lines to show count."""
    feeds = ActivityFeed.objects.filter(
        started_at__gte=since, finished_at__isnull=False, event_count__gt=0
    )
    opened = Q(opened_count__gt=0)
    per_day = list(
        feeds.annotate(day=TruncDate("started_at"))
        .values("day")
        .annotate(feeds=Count("id"), opened=Count("id", filter=opened))
        .order_by("day")
    )
    per_tool = list(
        ActivityEvent.objects.filter(kind=ActivityEvent.Kind.TOOL_CALL, feed__in=feeds)
        .values("tool")
        .annotate(
            feeds=Count("feed", distinct=True),
            opened=Count("feed", distinct=True, filter=Q(feed__opened_count__gt=0)),
        )
        .order_by("tool")
    )
    return {
        "opened_per_day": [{**row, "share": row["opened"] / row["feeds"]} for row in per_day],
        "opened_per_tool": [{**row, "share": row["opened"] / row["feeds"]} for row in per_tool],
    }


def token_stats(since) -> dict:
    """Tokens (and cost) per day, per user and per model, and who used up today's budget."""
    feeds = ActivityFeed.objects.filter(started_at__gte=since)
    sums = {"tokens": Sum("total_tokens"), "cost": Sum("cost"), "turns": Count("id")}

    def grouped(*by):
        return list(feeds.values(*by).annotate(**sums).order_by(*by))

    budget = settings.GLASSBOX_DAILY_TOKENS
    midnight = timezone.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    at_budget = []
    if budget:
        today = ActivityFeed.objects.filter(started_at__gte=midnight)
        at_budget = list(
            today.values("owner__username")
            .annotate(tokens=Sum("total_tokens"))
            .filter(tokens__gte=budget)
            .order_by("-tokens")
        )
    return {
        "tokens_per_day": grouped_by_day(feeds, sums),
        "tokens_per_user": sorted(grouped("owner__username"), key=lambda r: -(r["tokens"] or 0)),
        "tokens_per_model": grouped("model"),
        "budget": budget,
        "at_budget": at_budget,
    }


def grouped_by_day(feeds, sums) -> list[dict]:
    return list(
        feeds.annotate(day=TruncDate("started_at")).values("day").annotate(**sums).order_by("day")
    )


def _percentile(ordered: list[int], percent: int) -> int:
    if len(ordered) == 1:
        return ordered[0]
    return int(statistics.quantiles(ordered, n=100, method="inclusive")[percent - 1])


@admin.register(ToolCallRecord)
class ToolCallAdmin(ReadOnlyAdmin):
    """Every tool call across all feeds: what was asked, for whom, how it went, and why."""

    list_display = [
        "created_at", "user", "server_name", "tool", "ok", "duration_ms", "arguments_sent",
        "result_summary", "progress_count", "error_line", "rating_shown", "label", "feed_link",
    ]  # fmt: skip
    list_filter = [
        ServerFilter, ToolFilter, ModelFilter, LabelFilter, RatingFilter, "ok", DurationFilter,
        "created_at",
    ]  # fmt: skip
    list_select_related = ["feed__owner"]
    change_form_template = "admin/activity/toolcallrecord/change_form.html"
    search_fields = ["tool", "server", "result_summary", "error", "feed__owner__username"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    readonly_fields = ("feed_link", "server_name", "mcp_session", "tool", "call_id", "ok",
                       "duration_ms",
                       "result_summary", "error", "arguments_sent", "progress_count",
                       "last_progress", "result_structured", "result_links",
                       "created_at")  # fmt: skip
    fields = readonly_fields

    @admin.display(description="MCP server", ordering="server")
    def server_name(self, record):
        return record.server or "built-in"

    @admin.display(description="MCP session")
    def mcp_session(self, record):
        """The session of a Streamable HTTP server the call ran in (traces name it too)."""
        return record.mcp_session_id or "—"

    @admin.display(description="error")
    def error_line(self, record):
        """The error's last line (a traceback's says what went wrong); the whole is inside."""
        lines = record.error.strip().splitlines()
        return lines[-1][:200] if lines else ""

    @admin.display(description="last progress")
    def last_progress(self, record):
        if not record.progress_count:
            return "—"
        of = f" of {record.progress_total:g}" if record.progress_total else ""
        return f"{record.progress:g}{of}: {record.progress_message}".rstrip(": ")

    def get_queryset(self, request):
        call = ActivityEvent.objects.filter(
            feed_id=OuterRef("feed_id"), call_id=OuterRef("call_id"), kind="tool_call"
        )
        return (
            super()
            .get_queryset(request)
            .filter(kind=ActivityEvent.Kind.TOOL_RESULT)
            .annotate(
                sent=Subquery(call.values("arguments")[:1]),
                rating=_scores_of_call("rating"),
                label=_scores_of_call("label"),
            )
        )

    @admin.display(description="rating", ordering="rating")
    def rating_shown(self, record):
        """The call's latest rating by anyone (each person's latest is in the feed)."""
        return {"up": "👍", "down": "👎"}.get(record.rating or "", "—")

    @admin.display(description="label", ordering="label")
    def label(self, record):
        return record.label or "—"

    def get_urls(self):
        label = self.admin_site.admin_view(self.label_view)
        urls = [path("<int:object_id>/label/", label, name="activity_toolcallrecord_label")]
        return [*urls, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        record = self.get_object(request, object_id)
        scores = []
        if record is not None:
            rows = ActivityEvent.objects.filter(
                kind=ActivityEvent.Kind.SCORE, feed_id=record.feed_id, call_id=record.call_id
            )
            scores = [row.to_event() for row in rows.order_by("seq")]
        context = {
            "label_form": LabelForm() if is_auditor(request.user) else None,
            "scores": scores,
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, context)

    def label_view(self, request, object_id):
        """An auditor's label and note on this call: appended to its feed as a score."""
        if request.method != "POST" or not is_auditor(request.user):
            raise PermissionDenied
        record = self.get_object(request, str(object_id))
        if record is None:
            raise Http404
        form = LabelForm(request.POST)
        back = reverse("admin:activity_toolcallrecord_change", args=[record.pk])
        if not form.is_valid():
            self.message_user(request, form.errors.as_text(), messages.ERROR)
            return HttpResponseRedirect(back)
        try:
            label_call(
                user=request.user,
                feed_id=record.feed_id,
                call_id=record.call_id,
                label=form.cleaned_data["label"],
                note=form.cleaned_data["note"],
            )
        except LabelRefused as refused:
            self.message_user(request, str(refused), messages.ERROR)
        else:
            self.message_user(request, f"Labelled “{form.cleaned_data['label']}”.")
        return HttpResponseRedirect(back)

    @admin.display(description="user", ordering="feed__owner__username")
    def user(self, record):
        return record.feed.owner.get_username()

    @admin.display(description="arguments")
    def arguments_sent(self, record):
        return record.sent

    @admin.display(description="feed")
    def feed_link(self, record):
        url = reverse("admin:activity_activityfeed_change", args=[record.feed_id])
        return format_html('<a href="{}">feed {}</a>', url, record.feed_id)


@admin.register(FeedPreferences)
class FeedPreferencesAdmin(admin.ModelAdmin):
    list_display = ["user", "updated_at"]
    list_select_related = ["user"]


@admin.register(ChainReseal)
class ChainResealAdmin(ReadOnlyAdmin):
    """Every feed whose chain was sealed again after the erasure rewrote its events."""

    list_display = ["at", "feed", "reason", "previous_head", "head"]
    list_select_related = ["feed"]
    search_fields = ["reason"]


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    """The ledger of all feeds: each feed's closing as it ended (and again when closed anew),
    and each purge; manage.py verify_audit checks that it is one unbroken line."""

    list_display = ["id", "at", "feed_id", "sealed", "entry"]
    search_fields = ["=feed_id"]
    show_full_result_count = False
