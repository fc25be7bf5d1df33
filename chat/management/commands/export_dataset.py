from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from activity.management.commands._dates import moment
from chat.turns.datasets import DatasetFilters, dataset_lines


class Command(BaseCommand):
    help = (
        "Writes the eval dataset as JSON lines (docs/dataset.md): one record per rated or "
        "labelled answer or tool call, with the question, the memory the model saw, each "
        "call's arguments, result and approval, the answer, ratings and labels. Streams: "
        "memory stays flat."
    )

    def add_arguments(self, parser):
        parser.add_argument("--since", type=moment, help="scored from (inclusive)")
        parser.add_argument("--until", type=moment, help="scored before (exclusive)")
        parser.add_argument("--rating", choices=["up", "down"], help="a current rating")
        parser.add_argument("--label", default="", help="a current label")
        parser.add_argument("--tool", default="", help="a call of this tool")
        parser.add_argument("--output", "-o", help="a file to write (default: standard output)")

    def handle(self, *args, since, until, rating, label, tool, output=None, **options):
        if since and until and until <= since:
            raise CommandError("--until must come after --since.")
        filters = DatasetFilters(
            since=since, until=until, rating=rating or "", label=label, tool=tool
        )
        lines = dataset_lines(filters)
        if output is None:
            for line in lines:
                self.stdout.write(line, ending="")
            return
        try:
            with open(output, "x", encoding="utf-8", errors="surrogatepass") as file:
                file.writelines(lines)
        except FileExistsError:
            raise CommandError(f"{output} exists already; it is not overwritten.") from None
        except OSError as problem:
            raise CommandError(f"Cannot write {output}: {problem.strerror}.") from None
