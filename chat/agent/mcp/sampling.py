"""A server's request to use the turn's model (MCP sampling), for servers declared with
`"sampling": true` only: the session of any other declares no `sampling` capability, and the
SDK answers its requests with the protocol's error. The request is routed like a question
(chat.agent.mcp.elicitation) to the call's turn, which shows it and runs it once its person
approves (chat.agent.sampling); a denial is the refusal the spec lets a client give."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from django.utils.translation import gettext as _
from mcp.client.session import ClientRequestContext

from chat.agent.mcp.elicitation import QUESTIONS_PER_CALL, Connection, caller_of
from chat.agent.sampling import (
    MAX_TOKENS,
    MESSAGES_LIMIT,
    TEXT_LIMIT,
    TOTAL_TEXT,
    Refused,
    SampledMessage,
    SamplingRequest,
)

# The spec's example of a request its user rejected.
REJECTED = -1
PLACEHOLDERS = {"image": "[image]", "audio": "[audio]"}


def refusal(message: str) -> types.ErrorData:
    return types.ErrorData(code=REJECTED, message=message)


async def on_sample(
    connection: Connection, context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.ErrorData:
    """The session's sampling callback: the request goes to the call's turn."""
    asked = caller_of(connection)
    if asked is None:
        return refusal("No call of this client can be asked now")
    if params.tools or params.tool_choice:
        # Glassbox declares no `sampling.tools`: a model that calls the server's tools
        # would act outside the turn's approvals.
        return types.ErrorData(code=types.INVALID_PARAMS, message="Tools are not supported")
    if asked.count() > QUESTIONS_PER_CALL:
        asked.stop(
            _("the server asked more than %(limit)d questions in one call")
            % {"limit": QUESTIONS_PER_CALL}
        )
        return refusal("Too many requests in one call")
    request = request_of(connection.spec.name, asked.call_id, params)
    try:
        sampled = await asked.sample(request)
    except Refused as exc:
        return refusal(str(exc))
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=sampled.text),
        model=sampled.model,
        stop_reason=sampled.stop_reason,
    )


def request_of(
    server: str, call_id: str, params: types.CreateMessageRequestParams
) -> SamplingRequest:
    """The request within bounds: what had to be cut is marked `cut` (the card says so)."""
    cut = len(params.messages) > MESSAGES_LIMIT or params.max_tokens > MAX_TOKENS
    given = params.system_prompt or ""
    system_prompt = given[:TEXT_LIMIT]
    left = TOTAL_TEXT - len(system_prompt)
    cut = cut or len(system_prompt) < len(given)
    messages = []
    for message in params.messages[:MESSAGES_LIMIT]:
        text, editable = _text_of(message.content_as_list)
        kept = text[: min(TEXT_LIMIT, left)]
        left -= len(kept)
        cut = cut or len(kept) < len(text)
        messages.append(SampledMessage(message.role, kept, editable))
    preferences = params.model_preferences
    hints = tuple(
        (hint.name or "")[:100] for hint in (preferences.hints or [])[:5] if hint.name
    ) if preferences else ()  # fmt: skip
    priorities: dict[str, float] = {}
    if preferences is not None:
        for name in ("cost_priority", "speed_priority", "intelligence_priority"):
            value = getattr(preferences, name)
            if isinstance(value, int | float):
                priorities[name.removesuffix("_priority")] = float(value)
    return SamplingRequest(
        server=server,
        call_id=call_id,
        messages=tuple(messages),
        system_prompt=system_prompt,
        max_tokens=max(1, min(params.max_tokens, MAX_TOKENS)),
        model_hints=hints,
        priorities=priorities,
        temperature=params.temperature,
        cut=cut,
    )


def _text_of(blocks: list[Any]) -> tuple[str, bool]:
    """A message's text, with a placeholder for each block that is not text; editable when
    it is text only."""
    parts: list[str] = []
    editable = True
    for block in blocks:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            editable = False
            parts.append(PLACEHOLDERS.get(getattr(block, "type", ""), "[content]"))
    return "\n".join(parts), editable
