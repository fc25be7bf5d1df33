"""Who Glassbox is to the authorization servers of the MCP servers its users connect to: its
OAuth client metadata, written here only. The client registers with it (dynamic
registration) and the site serves it as its client ID metadata document
(/oauth/client-metadata.json), so the two cannot drift. The deployment's values come from
whoever reads the settings (chat.servers.oauth_client): the agent reads none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLIENT_NAME = "Glassbox"


@dataclass(frozen=True, slots=True)
class OAuthClient:
    # This site's callback, where authorization servers send users back.
    redirect_url: str
    # An https URL serving `document()`: the client ID where a server accepts one.
    metadata_url: str | None = None
    # Seconds a user's session may take to open once they answered (as any MCP server's).
    connect_timeout: float = 10.0

    def registration(self) -> dict[str, Any]:
        """The metadata the client registers with (RFC 7591), as JSON."""
        return {
            "client_name": CLIENT_NAME,
            "redirect_uris": [self.redirect_url],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "application_type": "web",
        }

    def document(self) -> dict[str, Any]:
        """The client ID metadata document: the same metadata, named by its own URL. Such a
        client proves nothing with a secret, so it authenticates with none."""
        return {
            "client_id": self.metadata_url,
            **self.registration(),
            "token_endpoint_auth_method": "none",
        }
