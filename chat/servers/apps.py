from __future__ import annotations

from django.apps import AppConfig


class ServersConfig(AppConfig):
    name = "chat.servers"
    # Its tables, permissions and admin pages are under this label (the tables keep the
    # names they had as chat's: models.py).
    label = "servers"
    verbose_name = "MCP servers"

    def ready(self) -> None:
        """Erasing an account also disconnects it from every MCP server (erased.py)."""
        from chat.servers import erased  # noqa: F401 - connects the receiver
