from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        """Connects the socket's receivers and registers the check of chat's sealed records;
        starters that cannot be used stop start-up, naming the setting."""
        from activity.auditing.audit import register_record_check
        from chat.conversations.sealed_records import sealed_records_check
        from chat.socket import revocation  # noqa: F401 - connects the receivers

        register_record_check(sealed_records_check)

        from chat.pages import starters

        problem = starters.problem(settings.GLASSBOX_STARTERS)
        if problem:
            raise ImproperlyConfigured(problem)
