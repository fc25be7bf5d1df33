"""A turn's tool context for tests that run the agent or a tool without the turn pipeline."""

from __future__ import annotations

from chat.agent.context import Person, ToolContext
from chat.tools.context import APP_SERVICES, AppContext, AppServices


def tool_context(
    *,
    user: Person | None = None,
    conversation_id: str = "00000000-0000-0000-0000-000000000000",
    language: str = "en",
    services: AppServices = APP_SERVICES,
) -> AppContext:
    return ToolContext(
        user=user or Person(id=1, name="alice"),
        conversation_id=conversation_id,
        language=language,
        services=services,
    )
