"""Questions a tool asks the person whose turn runs it (an MCP server's elicitation): what a
question and its reply are, and where the runner's `Asker` and the running call are found.
No SDK here: a deployment without MCP servers loads none (chat.agent.mcp)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from chat.agent.sampling import Sampled, SamplingRequest

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class Question:
    """What a server asks, as it sent it (untrusted; the page escapes it)."""

    server: str
    call_id: str
    mode: Literal["form", "url"]
    message: str
    schema: dict[str, Any]
    url: str = ""
    # The server's id of a URL-mode question (2025-11-25), for its completion notice.
    elicitation_id: str = ""


@dataclass(frozen=True, slots=True)
class Reply:
    action: Action
    content: dict[str, Any] | None = None


class Asker(Protocol):
    """Shows a question to the person whose turn it is and waits for the answer (or the
    question's deadline, then `cancel`)."""

    async def ask(self, question: Question) -> Reply: ...

    async def completed(self, server: str, elicitation_id: str) -> None: ...

    async def sample(self, request: SamplingRequest) -> Sampled:
        """Shows a server's request to use the model, and runs it once approved; raises
        chat.agent.sampling.Refused when denied, not answered in time or not affordable."""
        ...


_asker: contextvars.ContextVar[Asker | None] = contextvars.ContextVar("asker", default=None)
_call_id: contextvars.ContextVar[str] = contextvars.ContextVar("asking_call", default="")
_clock: contextvars.ContextVar[asyncio.Timeout | None] = contextvars.ContextVar(
    "call_clock", default=None
)
_state: contextvars.ContextVar[CallState | None] = contextvars.ContextVar(
    "call_state", default=None
)


@dataclass(slots=True)
class CallState:
    """One call's count of questions, and why it was stopped before its time ran out."""

    asked: int = 0
    stopped: str = ""


def ask_with(asker: Asker | None) -> None:
    """The current task's (a turn's) questions go to `asker`; its tools' tasks inherit it."""
    _asker.set(asker)


def in_call(call_id: str, clock: asyncio.Timeout, state: CallState | None = None) -> None:
    """The current task (a tool call's) runs `call_id` within the time limit `clock`."""
    _call_id.set(call_id)
    _clock.set(clock)
    _state.set(state)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a question goes to: the turn's asker, the call and its time limit."""

    asker: Asker
    call_id: str
    clock: asyncio.Timeout | None
    state: CallState | None = None

    async def ask(self, question: Question) -> Reply:
        with paused(self.clock):
            return await self.asker.ask(question)

    async def sample(self, request: SamplingRequest) -> Sampled:
        with paused(self.clock):
            return await self.asker.sample(request)

    def count(self) -> int:
        """This question's number in its call (1 for the first)."""
        if self.state is None:
            return 1
        self.state.asked += 1
        return self.state.asked

    def stop(self, why: str) -> None:
        """Ends the call now, as if its time ran out, with `why` as its reason."""
        if self.state is not None:
            self.state.stopped = why
        if self.clock is not None and not self.clock.expired():
            self.clock.reschedule(asyncio.get_running_loop().time())


def caller() -> Caller | None:
    """The current task's caller, if it runs a call of a turn that can be asked."""
    asker = _asker.get()
    return None if asker is None else Caller(asker, _call_id.get(), _clock.get(), _state.get())


@contextmanager
def paused(clock: asyncio.Timeout | None) -> Iterator[None]:
    """A person's time to answer does not count against the call's time limit (the
    question has its own deadline)."""
    when = clock.when() if clock is not None else None
    if clock is None or when is None or clock.expired():
        yield
        return
    loop = asyncio.get_running_loop()
    left = when - loop.time()
    clock.reschedule(None)
    try:
        yield
    finally:
        clock.reschedule(loop.time() + max(left, 0.0))
