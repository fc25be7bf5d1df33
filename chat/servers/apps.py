from __future__ import annotations

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class ServersConfig(AppConfig):
    name = "chat.servers"
    # Its permissions and admin pages are under this label (its tables keep the names they
    # had as chat's: models.py).
    label = "servers"
    verbose_name = "MCP servers"

    def ready(self) -> None:
        """Erasing an account also disconnects it from every MCP server (erased.py); a server
        declaration that cannot be used stops start-up, naming the setting."""
        from chat.agent.mcp.config import ServerConfigError
        from chat.servers import erased  # noqa: F401 - connects the receiver
        from chat.servers.configured import settings_servers

        try:
            declared = settings_servers()
        except ServerConfigError as exc:
            raise ImproperlyConfigured(f"GLASSBOX_MCP_SERVERS: {exc}") from None
        if any(spec.oauth for spec in declared):
            from chat.servers.secrets import token_key

            token_key()  # a production site without GLASSBOX_TOKEN_KEY stops here, saying so
