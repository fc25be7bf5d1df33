"""The deployment's OAuth client for the MCP servers each user connects to, read from the
settings in one place: the turn's asker hands it to the agent, and the site serves its
metadata document."""

from __future__ import annotations

from django.conf import settings

from chat.agent.mcp.client_metadata import OAuthClient


def deployment_client() -> OAuthClient:
    return OAuthClient(
        redirect_url=settings.GLASSBOX_OAUTH_REDIRECT_URL,
        metadata_url=settings.GLASSBOX_OAUTH_CLIENT_METADATA_URL,
        connect_timeout=settings.GLASSBOX_MCP_CONNECT_TIMEOUT,
    )
