"""The agent's policy as this deployment's settings have it, built for each turn."""

from __future__ import annotations

from types import MappingProxyType

from django.conf import settings

from chat.agent.policy import AgentPolicy


def agent_policy() -> AgentPolicy:
    return AgentPolicy(
        model=settings.GLASSBOX_MODEL,
        max_tool_rounds=settings.GLASSBOX_MAX_TOOL_ROUNDS,
        tool_timeout=settings.GLASSBOX_TOOL_TIMEOUT,
        approval=MappingProxyType(dict(settings.GLASSBOX_APPROVAL)),
        # The demo model (no key) speaks Chat Completions only.
        model_api=settings.GLASSBOX_MODEL_API if settings.OPENAI_API_KEY else "chat_completions",
        stream_usage=settings.GLASSBOX_STREAM_USAGE,
        reasoning_summary=settings.GLASSBOX_REASONING_SUMMARY,
        language=settings.LANGUAGE_CODE,
    )
