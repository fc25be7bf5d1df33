from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        """Connects the socket's receivers and registers the check of chat's sealed records;
        a server declaration that cannot be used stops start-up, naming the setting."""
        from activity.auditing.audit import register_record_check
        from chat.agent.mcp.config import ServerConfigError
        from chat.conversations.sealed_records import sealed_records_check
        from chat.servers.configured import settings_servers
        from chat.socket import revocation  # noqa: F401 - connects the receivers

        register_record_check(sealed_records_check)

        from chat.pages import starters

        problem = starters.problem(settings.GLASSBOX_STARTERS)
        if problem:
            raise ImproperlyConfigured(problem)

        try:
            servers = settings_servers()
        except ServerConfigError as exc:
            raise ImproperlyConfigured(f"GLASSBOX_MCP_SERVERS: {exc}") from None
        if any(spec.oauth for spec in servers):
            from chat.servers.secrets import token_key

            token_key()  # a production site without GLASSBOX_TOKEN_KEY stops here, saying so
