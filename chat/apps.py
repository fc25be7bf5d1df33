from __future__ import annotations

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        """Connects the socket's receivers and hands the built-in tools the knowledge base
        and the outbox; a server declaration that cannot be used stops start-up, naming the
        setting."""
        from chat.agent import services
        from chat.agent.mcp.config import ServerConfigError, declared_servers
        from chat.conversations.outbox import outbox_add
        from chat.knowledge.search import fresh_index, search_documents
        from chat.socket import session  # noqa: F401 - connects the receivers

        services.provide(
            services.Services(
                fresh_index=fresh_index, search_documents=search_documents, outbox_add=outbox_add
            )
        )

        try:
            declared_servers()
        except ServerConfigError as exc:
            raise ImproperlyConfigured(f"GLASSBOX_MCP_SERVERS: {exc}") from None
