from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from activity.auditing.audit import ledger_head, ledger_problems, period, verify
from activity.management.commands._dates import moment


class Command(BaseCommand):
    help = (
        "Checks every feed (or those begun since a date): its hash chain, its closing (its "
        "record, model calls, approvals and answer text) and the ledger of all feeds, and "
        "prints each problem; exits with status 1 if there is any. See SECURITY.md for what "
        "it proves."
    )

    def add_arguments(self, parser):
        parser.add_argument("--since", type=moment, help="only feeds begun on or after this")

    def handle(self, *args, since=None, **options):
        feeds = events = resealed = sealed = 0
        broken = []
        for integrity in verify(period(since, None)):
            feeds += 1
            events += integrity.check.events
            resealed += integrity.resealed
            sealed += integrity.sealed
            if not integrity.intact:
                broken.append(integrity.feed_id)
                self.stdout.write(f"feed {integrity.feed_id}: BROKEN, {integrity.problem()}")
        gaps = 0
        for problem in ledger_problems(since):
            gaps += 1
            self.stdout.write(f"ledger: {problem}")
        self.stdout.write(
            f"Checked {feeds} feed(s), {events} event(s): {feeds - len(broken)} intact, "
            f"{len(broken)} broken; {sealed} closed and sealed; {resealed} resealed after an "
            f"erasure. Ledger: {gaps} problem(s), last entry {ledger_head()[:16]}."
        )
        if broken or gaps:
            raise CommandError(
                f"{len(broken)} feed(s) and {gaps} ledger problem(s) fail verification.",
                returncode=1,
            )
