from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from activity.audit import period, verify
from activity.management.commands._dates import moment


class Command(BaseCommand):
    help = (
        "Checks the hash chain of every feed (or of those begun since a date) and prints each "
        "feed that breaks; exits with status 1 if any does. See SECURITY.md for what it proves."
    )

    def add_arguments(self, parser):
        parser.add_argument("--since", type=moment, help="only feeds begun on or after this")

    def handle(self, *args, since=None, **options):
        feeds = events = resealed = 0
        broken = []
        for integrity in verify(period(since, None)):
            feeds += 1
            events += integrity.check.events
            resealed += integrity.resealed
            if not integrity.intact:
                broken.append(integrity.feed_id)
                self.stdout.write(f"feed {integrity.feed_id}: BROKEN, {integrity.problem()}")
        self.stdout.write(
            f"Checked {feeds} feed(s), {events} event(s): {feeds - len(broken)} intact, "
            f"{len(broken)} broken; {resealed} resealed after an erasure."
        )
        if broken:
            raise CommandError(f"{len(broken)} feed(s) fail verification.", returncode=1)
