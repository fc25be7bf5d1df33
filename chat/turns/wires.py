"""The one shape of every stream a turn is sent on: a `Wire` maps the turn's events to
frames and encodes each frame for its transport. The socket (HTML fragments for htmx, or
program frames with the `glassbox.json` subprotocol), the JSON SSE stream, AG-UI and the UI
message stream are all Wires, so a new transport is one class here or beside its transport.

A frame's id is the position of the turn after that frame: the seq of the last recorded event
it comes from, the frame's part within that event, and how much of the answer text was sent.
All three are read from stored events and text offsets, so the ids are the same in every
process and whether the turn is followed live or replayed from the database. A keyed update
that is not stored (a call's progress, its feedback) is numbered where it comes without moving
the frames after it, so it never shifts another frame's id. The one resume rule: a stream is
the turn's stored events then its live ones through a fresh Wire, less the frames a client
says it has (`Resume`, from a `Cursor`; None for a new client)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from activity.preferences.feed_prefs import FeedPrefs
from activity.presenting.program_frames import ProgramFrames
from activity.recording.events import (
    Decision,
    Done,
    Plan,
    Status,
    ToolCall,
    ToolLog,
    ToolResult,
    WireEvent,
)

_ID = re.compile(r"(\d{1,12})-(\d{1,6})-(\d{1,12})")


class BadEventId(ValueError):
    """A Last-Event-ID this stream never sent."""

    def __init__(self) -> None:
        super().__init__(
            "Last-Event-ID must be the id of a frame of this stream "
            '(three numbers joined by "-", as in "3-2-0").'
        )


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    seq: int = 0
    part: int = 0
    text: int = 0

    def __str__(self) -> str:
        return f"{self.seq}-{self.part}-{self.text}"

    @classmethod
    def parse(cls, value: str) -> Cursor:
        match = _ID.fullmatch(value)
        if match is None:
            raise BadEventId
        return cls(*(int(number) for number in match.groups()))

    def check_sent(self, stored: Iterable[Frame], *, text: int, running: bool) -> None:
        """Raises BadEventId unless a stream of this turn could have sent this id: `stored`
        are the frames of its stored events, `text` the length of its stored answer. Live,
        the answer's text comes in pieces between the events (its message opened and closed
        as frames of the event before), stored in one piece after them: so the id must name
        a stored event, a part of it (or of the text frames live added to it), and no more
        text than there is. A turn that still runs may have sent ids past what is stored."""
        parts: dict[int, int] = {0: 0}
        for frame in stored:
            parts[frame.id.seq] = max(parts.get(frame.id.seq, 0), frame.id.part)
        if running and self.seq > max(parts):
            return
        known = self.seq in parts and self.part <= parts[self.seq] + TEXT_FRAMES
        if not known or (self.text > text and not running):
            raise BadEventId


# The frames live text adds to an event's: its message's start and end.
TEXT_FRAMES = 2


@dataclass(slots=True)
class Frame:
    """One event of a standard wire. `text_from` is set on a frame carrying answer text
    (under the key "delta"): the offset of its first character. `reopen` is what a client
    that resumes with this frame must be sent first (the run, and whatever is open in it)."""

    id: Cursor
    payload: Any
    reopen: list[Any] = field(default_factory=list)
    text_from: int | None = None
    # The end of a stream is sent again to a client that resumes after it.
    terminal: bool = False
    # A keyed update the client keeps once, by its key (a call's progress or feedback): live
    # only or placed by the record, so it has the id of the frame before it and is sent again
    # to a client that resumes at that id (a second copy changes nothing it rebuilds).
    in_place: bool = False
    # The frames that open and close the answer's text part on a wire whose client cannot
    # carry on an open part in a new read (the AI SDK's reader starts every read with none):
    # a client resuming between them is sent the part again (`Wire.rebuild`), and the
    # stream's own opening is then left out.
    step: Literal["start", "end", ""] = ""


class Numbering:
    """The position a mapping is at, and the frames it numbers from it."""

    def __init__(self) -> None:
        self.seq = 0
        self.part = 0
        self.text = 0

    def at_event(self, event: WireEvent) -> None:
        match event:
            case (
                Status(seq=int(seq))
                | ToolCall(seq=int(seq))
                | ToolResult(seq=int(seq))
                | Decision(seq=int(seq))
                | Plan(seq=int(seq))
                | ToolLog(seq=int(seq))
            ):
                self.seq, self.part = seq, 0
            case _:
                pass  # unnumbered: text, a tool's progress, the turn's start and end

    def frame(
        self,
        payload: Any,
        reopen: list[Any],
        *,
        terminal: bool = False,
        step: Literal["start", "end", ""] = "",
    ) -> Frame:
        self.part += 1
        at = Cursor(self.seq, self.part, self.text)
        return Frame(at, payload, reopen, terminal=terminal, step=step)

    def in_place(
        self, payload: Any, reopen: list[Any], *, step: Literal["start", "end", ""] = ""
    ) -> Frame:
        """A keyed update, at the id of the frame before it (see Frame.in_place)."""
        at = Cursor(self.seq, self.part, self.text)
        return Frame(at, payload, reopen, in_place=True, step=step)

    def text_frame(self, payload: Any, reopen: list[Any], length: int) -> Frame:
        start = self.text
        self.text += length
        return Frame(Cursor(self.seq, self.part, self.text), payload, reopen, text_from=start)


def resumed(frame: Frame, after: Cursor) -> Frame | None:
    """The frame as a client that has everything up to `after` still needs it: None if it
    has it, the rest of its text if it has part of that."""
    if frame.terminal:
        return frame
    if frame.in_place:
        return frame if frame.id >= after else None
    if frame.text_from is not None:
        if frame.id.text <= after.text:
            return None
        if frame.text_from < after.text:
            frame.payload = _without_first(frame.payload, after.text - frame.text_from)
        return frame
    if (frame.id.seq, frame.id.part) <= (after.seq, after.part) and frame.id.text <= after.text:
        return None
    return frame


def _without_first(payload: Any, chars: int) -> Any:
    return _with_delta(payload, _delta(payload)[chars:])


def _delta(payload: Any) -> str:
    return str(payload["delta"] if isinstance(payload, dict) else payload.delta)


def _with_delta(payload: Any, delta: str) -> Any:
    if isinstance(payload, dict):
        return payload | {"delta": delta}
    return payload.model_copy(update={"delta": delta})


def _had_of(whole: Any, kept: Frame | None) -> Any:
    """What a client had of a frame whose payload was `whole`: all of it, none, or the
    first part of its text."""
    if kept is None:
        return whole
    if kept.payload is whole:
        return None
    return _with_delta(whole, _delta(whole)[: len(_delta(whole)) - len(_delta(kept.payload))])


class Resume:
    """Frames less what a client resuming after `after` has (None: a new client). Before the
    first frame it still needs, what it must reopen to carry on, numbered `after`: the
    frame's `reopen`, or, for a client that stopped inside the answer's text on a wire that
    cannot reopen a text part (`Wire.rebuild`), that text part rebuilt with what it had. A
    replay sends the text after the stored events, so that first frame is held until the
    text it had has come by."""

    def __init__(self, after: Cursor | None, rebuild: Rebuild | None = None) -> None:
        self.after = after
        self.reopened = after is None
        self.mid_text = after is not None and after.text > 0 and rebuild is not None
        self.rebuild = rebuild
        self.rebuilt = False
        self.had_text: list[str] = []
        self.had: list[Any] = []
        self.held: list[Frame] = []

    def frames(self, frames: Iterable[Frame]) -> Iterator[Frame]:
        for frame in frames:
            if self.after is None:
                yield frame
                continue
            whole = frame.payload
            kept = resumed(frame, self.after)
            if self.reopened:
                # Its text part is open again: the stream's own opening would be a second.
                if kept is not None and not (self.rebuilt and frame.step == "start"):
                    yield kept
                continue
            self._had(frame, _had_of(whole, kept))
            if kept is not None:
                self.held.append(kept)
            if self.held and self._text_had(frame):
                yield from self._carry_on()

    def _had(self, frame: Frame, had: Any) -> None:
        if had is None or self.rebuild is None:
            return
        if frame.step:
            # It had the text part's opening (perhaps no text yet), or its end.
            self.mid_text = frame.step == "start"
        elif frame.text_from is not None:
            self.had_text.append(_delta(had))
        else:
            self.had.append(had)

    def _text_had(self, frame: Frame) -> bool:
        """Whether the text the client had has come by (or it needs none)."""
        assert self.after is not None
        had = sum(len(text) for text in self.had_text)
        return not self.mid_text or frame.terminal or had >= self.after.text

    def _carry_on(self) -> Iterator[Frame]:
        assert self.after is not None
        self.reopened = True
        held, self.held = self.held, []
        if self.mid_text and self.rebuild is not None:
            self.rebuilt = True
            opening = self.rebuild("".join(self.had_text), self.had)
        else:
            opening = held[0].reopen
        yield from (Frame(self.after, payload) for payload in opening)
        yield from (f for f in held if not (self.rebuilt and f.step == "start"))


# A wire's way to bring a client that resumes inside the answer's text back to what it had:
# from the text it had and the other frames it had, what to send it first.
Rebuild = Callable[[str, list[Any]], list[Any]]


class Wire(Protocol):
    """One turn on one stream: its events as frames, each frame as the transport's text."""

    # Whether the stream ends where the turn waits for its owner's decision (a standard's
    # run does, after `interrupt`; our own events go on to `done`).
    ends_at_wait: bool

    def frames(self, event: WireEvent) -> Iterator[Frame]: ...

    def interrupt(self, waiting: Status) -> Iterator[Frame]: ...

    def encode(self, frame: Frame) -> str: ...

    @property
    def rebuild(self) -> Rebuild | None:
        """None where a frame's `reopen` reopens whatever was open (Resume)."""
        ...

    @property
    def closing(self) -> str: ...


class ProgramWire:
    """Our own JSON events, as a program with these (`program` surface) feed settings is sent
    them (activity.presenting.program_frames decides which), one JSON text a frame: the
    `glassbox.json` socket's; SSE encodes the same frames its way (chat.api.sse)."""

    ends_at_wait = False
    closing = ""

    def __init__(self, prefs: FeedPrefs, answer_id: int, language: str = "") -> None:
        # `language`: the one the `label` frame speaks ('' keeps the active one).
        self.mapping = ProgramFrames(prefs, answer_id, language)
        self.at = Numbering()

    def frames(self, event: WireEvent) -> Iterator[Frame]:
        self.at.at_event(event)
        ends = isinstance(event, Done)
        for payload in self.mapping.frames(event):
            yield self.at.frame(payload, [], terminal=ends and payload["type"] == "done")

    rebuild = None

    def interrupt(self, waiting: Status) -> Iterator[Frame]:
        return iter(())

    def encode(self, frame: Frame) -> str:
        return json.dumps(frame.payload, ensure_ascii=False)
