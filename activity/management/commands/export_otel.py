from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from activity import telemetry
from activity.management.commands._dates import moment
from activity.models import ActivityEvent, ActivityFeed
from activity.telemetry import phoenix


class Command(BaseCommand):
    help = (
        "Sends the traces of every finished turn that began in a period to the OTLP endpoint "
        "of the standard OTEL_* variables: the same spans, ids and recorded times as a turn "
        "sends when it ends, each with its own provider and model; with GLASSBOX_PHOENIX_URL "
        "set, their ratings and labels as Phoenix annotations too."
    )

    def add_arguments(self, parser):
        parser.add_argument("--since", type=moment, required=True, help="start (inclusive)")
        parser.add_argument("--until", type=moment, required=True, help="end (exclusive)")

    def handle(self, *args, since, until, **options):
        if until <= since:
            raise CommandError("--until must come after --since.")
        if not telemetry.enabled():
            raise CommandError(
                "Set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:6006) or "
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, with OTEL_SDK_DISABLED unset, to send traces."
            )
        from activity.telemetry import export

        try:
            count = export.period_export(since, until)
        except export.ExportFailed as failed:
            raise CommandError(str(failed)) from None
        self.stderr.write(
            f"Sent {count} turn{'s' if count != 1 else ''} of "
            f"[{since:%Y-%m-%d %H:%M}, {until:%Y-%m-%d %H:%M}) to "
            f"{export.processor_endpoint()}."
        )
        if phoenix.enabled():
            # After their spans, which the exporter waited for: Phoenix annotates a span it has.
            scored = ActivityFeed.objects.filter(
                started_at__gte=since,
                started_at__lt=until,
                events__kind=ActivityEvent.Kind.SCORE,
            ).distinct()
            sent = phoenix.period_annotations(scored.order_by("pk"))
            self.stderr.write(f"Sent {sent} rating and label annotation(s) to Phoenix.")
