from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from activity.auditing.audit import evidence_lines, period
from activity.management.commands._dates import moment


class Command(BaseCommand):
    help = (
        "Writes everything the agent did in a period as NDJSON evidence: each feed, its events "
        "with their hashes (tool calls, results, approvals), its model calls and its chain as "
        "checked now, then a manifest of counts and digests. Streams: memory stays flat."
    )

    def add_arguments(self, parser):
        parser.add_argument("--since", type=moment, required=True, help="start (inclusive)")
        parser.add_argument("--until", type=moment, required=True, help="end (exclusive)")
        parser.add_argument("--output", "-o", help="a file to write (default: standard output)")

    def handle(self, *args, since, until, output=None, **options):
        if until <= since:
            raise CommandError("--until must come after --since.")
        lines = evidence_lines(period(since, until), since=since, until=until)
        if output is None:
            for line in lines:
                self.stdout.write(line, ending="")
            return
        try:
            with open(output, "x", encoding="utf-8", errors="surrogatepass") as file:
                file.writelines(lines)
        except FileExistsError:
            raise CommandError(
                f"{output} exists already; evidence is never overwritten."
            ) from None
        except OSError as problem:
            raise CommandError(f"Cannot write {output}: {problem.strerror}.") from None
        self.stderr.write(
            f"Evidence for [{since:%Y-%m-%d %H:%M}, {until:%Y-%m-%d %H:%M}) in {output}."
        )
