from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from chat.conversations.services import deleted_conversations_purge


class Command(BaseCommand):
    help = (
        "Removes conversations deleted more than GLASSBOX_RETENTION_DAYS ago, with their "
        "feeds. Safe to run from cron: it only ever removes what has expired."
    )

    def handle(self, *args, **options):
        removed = deleted_conversations_purge()
        self.stdout.write(
            f"Purged {removed} conversation(s) deleted more than "
            f"{settings.GLASSBOX_RETENTION_DAYS} days ago."
        )
