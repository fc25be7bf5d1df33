"""An MCP server's request to use the turn's model (`sampling/createMessage`): the request as
the person whose call it runs is shown it, the edits they may make, and the one model call an
approved request makes through the turn's provider. No SDK here (chat.agent.mcp.sampling reads
the protocol's request) and no settings: the runner hands in the client and the policy.

Everything in a request is the server's, untrusted: cut to bounds when it arrives, so its card
fits a socket's frame (6,000 characters in all, at up to six bytes a character once escaped,
stay under activity.presenting.bounded's budget). What is cut is cut for the model too: the
person approves what they were shown, and the card says that the server sent more."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from django.utils.translation import gettext as _

from activity.recording.events import ModelCallDone
from chat.agent.chunks import tokens
from chat.agent.model_api import MODEL_APIS
from chat.agent.policy import AgentPolicy

if TYPE_CHECKING:
    from openai import AsyncOpenAI

MESSAGES_LIMIT = 20
TEXT_LIMIT = 2_000
# The characters of all the request's texts together (its messages and system prompt).
TOTAL_TEXT = 6_000
# The most one request may have the model write, whatever the server or the person asks.
MAX_TOKENS = 4_096
# A request's model calls are numbered after the turn's own rounds (a ModelCall's `round`
# is unique in its feed): the first is this one.
FIRST_ROUND = 1_000
# How the model's finish reasons are said to the server (the spec's stopReason).
STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "max_output_tokens": "maxTokens"}

Role = Literal["user", "assistant"]


class Refused(Exception):
    """The request is not carried out; the message is for the server (and the feed)."""


class Invalid(Exception):
    """Edits that do not fit the request; `errors` says, per field, what is wrong."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {why}" for name, why in errors.items()))
        self.errors = errors


@dataclass(frozen=True, slots=True)
class SampledMessage:
    role: Role
    text: str
    # Text the person may edit; a placeholder for an image or a sound is shown, not sent.
    editable: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "text": self.text, "editable": self.editable}


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    server: str
    call_id: str
    messages: tuple[SampledMessage, ...]
    max_tokens: int
    system_prompt: str = ""
    # What the server would prefer; shown, the deployment's model answers anyway.
    model_hints: tuple[str, ...] = ()
    priorities: dict[str, float] = field(default_factory=dict)
    temperature: float | None = None
    # Something the server sent was cut to fit (more messages, longer texts, more tokens).
    cut: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": [m.to_json() for m in self.messages],
            "system_prompt": self.system_prompt,
            "max_tokens": self.max_tokens,
            "model_hints": list(self.model_hints),
            "priorities": dict(self.priorities),
            "temperature": self.temperature,
            "cut": self.cut,
        }

    @classmethod
    def from_json(cls, server: str, call_id: str, data: dict[str, Any]) -> SamplingRequest:
        """A request as `to_json` stored it (the record is ours, written from a checked one)."""
        return cls(
            server=server,
            call_id=call_id,
            messages=tuple(
                SampledMessage(m["role"], m["text"], bool(m.get("editable", True)))
                for m in data.get("messages", [])
            ),
            max_tokens=int(data.get("max_tokens", 1)),
            system_prompt=str(data.get("system_prompt", "")),
            model_hints=tuple(data.get("model_hints", ())),
            priorities=dict(data.get("priorities", {})),
            temperature=data.get("temperature"),
            cut=bool(data.get("cut", False)),
        )

    def edited(self, values: dict[str, Any]) -> SamplingRequest:
        """The request as the person approved it: `system_prompt`, `max_tokens` and
        `message_<n>` (a text message's new text) replace what the server sent; a value
        absent keeps it. Raises Invalid, naming every field at fault."""
        errors: dict[str, str] = {}
        messages = list(self.messages)
        system_prompt, max_tokens = self.system_prompt, self.max_tokens
        for name, value in values.items():
            if name == "max_tokens":
                try:
                    max_tokens = int(str(value).strip())
                except ValueError:
                    errors[name] = _("enter a whole number")
                    continue
                if not 1 <= max_tokens <= MAX_TOKENS:
                    errors[name] = _("between 1 and %(limit)d") % {"limit": MAX_TOKENS}
            elif name == "system_prompt":
                system_prompt = _text(value, name, errors)
            elif name.startswith("message_") and name[8:].isdigit():
                index = int(name[8:])
                if index >= len(messages) or not messages[index].editable:
                    errors[name] = _("the request has no such text message")
                    continue
                messages[index] = replace(messages[index], text=_text(value, name, errors))
            else:
                errors[name] = _("the request has no such field")
        if not errors and sum(len(m.text) for m in messages) + len(system_prompt) > TOTAL_TEXT:
            errors["messages"] = _("at most %(limit)d characters in all") % {"limit": TOTAL_TEXT}
        if errors:
            raise Invalid(errors)
        return replace(
            self, messages=tuple(messages), system_prompt=system_prompt, max_tokens=max_tokens
        )

    def conversation(self) -> list[dict[str, Any]]:
        """The request as chat messages, as the loop's conversation is kept."""
        chat: list[dict[str, Any]] = []
        if self.system_prompt:
            chat.append({"role": "system", "content": self.system_prompt})
        return chat + [{"role": m.role, "content": m.text} for m in self.messages]


def _text(value: Any, name: str, errors: dict[str, str]) -> str:
    if not isinstance(value, str):
        errors[name] = _("enter text")
        return ""
    if len(value) > TEXT_LIMIT:
        errors[name] = _("at most %(limit)d characters") % {"limit": TEXT_LIMIT}
    return value


class Failed(Refused):
    """The model call failed; `call` is what it cost, for the audit."""

    def __init__(self, call: ModelCallDone) -> None:
        super().__init__(_("the model could not answer"))
        self.call = call


@dataclass(frozen=True, slots=True)
class Sampled:
    """What the model wrote, as the server is told it."""

    text: str
    model: str
    stop_reason: str | None = None


async def sample(
    client: AsyncOpenAI, policy: AgentPolicy, request: SamplingRequest, round_number: int
) -> tuple[Sampled, ModelCallDone]:
    """One request to the model, without tools; its text, and the call for the audit (also
    when the request fails, as the loop keeps a failed round: then raises Refused)."""
    started = time.monotonic()
    text: list[str] = []
    # A reasoning model's thinking is kept for the audit, as the loop keeps a round's.
    reasoning: list[str] = []
    usage = None
    model = policy.model
    finish_reason: str | None = None

    def call_done(error_type: str = "") -> ModelCallDone:
        return ModelCallDone(
            round=round_number,
            model=str(model),
            duration_ms=int((time.monotonic() - started) * 1000),
            reasoning="".join(reasoning),
            prompt_tokens=tokens(usage, "prompt_tokens"),
            completion_tokens=tokens(usage, "completion_tokens"),
            reasoning_tokens=tokens(usage, "completion_tokens_details", "reasoning_tokens"),
            cached_tokens=tokens(usage, "prompt_tokens_details", "cached_tokens"),
            error_type=error_type,
        )

    try:
        reply = await MODEL_APIS[policy.model_api].open(
            client, policy, request.conversation(), None, max_tokens=request.max_tokens
        )
        async for chunk in reply.chunks:
            usage = chunk.usage or usage
            model = chunk.model or model
            if chunk.has_choice:
                finish_reason = chunk.finish_reason or finish_reason
                text.append(chunk.content)
                reasoning.append(chunk.reasoning)
    except Exception as exc:
        raise Failed(call_done(type(exc).__qualname__)) from exc
    if finish_reason is None:
        raise Failed(call_done("ProviderError"))
    sampled = Sampled("".join(text), str(model), STOP_REASONS.get(finish_reason, finish_reason))
    return sampled, call_done()
