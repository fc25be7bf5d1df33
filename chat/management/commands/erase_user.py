from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from chat.conversations.erasure import ErasureRefused, account_erase, terms


class Command(BaseCommand):
    help = "Erases an account: its personal data at once; an anonymous audit skeleton for a while."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    def handle(self, *args, username, yes, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No account is called {username!r}.")
        self.stdout.write(f"Erasing {username}:")
        for term in terms():
            self.stdout.write(f"  - {term}")
        if not yes and input("Type the username again to go on: ") != username:
            raise CommandError("Nothing was erased.")
        try:
            left_as = account_erase(user=user)
        except ErasureRefused as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(f"Erased; the audit now shows the account as {left_as}.")
