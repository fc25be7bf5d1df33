from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from chat.knowledge.documents import DOCUMENTS
from chat.models import Document


class Command(BaseCommand):
    help = "Creates the demo user (demo / demo) and the demo knowledge base. Safe to re-run."

    @transaction.atomic
    def handle(self, *args, **options):
        User = get_user_model()
        user, created = User.objects.get_or_create(username="demo")
        if created:
            user.set_password("demo")
            user.save()
        added = 0
        for title, language, body in DOCUMENTS:
            _, was_added = Document.objects.get_or_create(
                title=title, defaults={"language": language, "body": body}
            )
            added += was_added
        self.stdout.write(
            f"Demo user 'demo' {'created' if created else 'already exists'}; "
            f"{added} knowledge-base documents added ({Document.objects.count()} in all)."
        )
