from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        """Connects the socket's receivers, registers the check of chat's sealed records and
        hands the agent the knowledge base and the outbox; starters that cannot be used stop
        start-up, naming the setting."""
        from activity.auditing.audit import register_record_check
        from chat.agent import services
        from chat.conversations.outbox import outbox_add
        from chat.conversations.sealed_records import sealed_records_check
        from chat.knowledge.search import fresh_index, search_documents
        from chat.socket import revocation  # noqa: F401 - connects the receivers

        register_record_check(sealed_records_check)

        services.provide(
            services.Services(
                fresh_index=fresh_index, search_documents=search_documents, outbox_add=outbox_add
            )
        )

        from chat.pages import starters

        problem = starters.problem(settings.GLASSBOX_STARTERS)
        if problem:
            raise ImproperlyConfigured(problem)
