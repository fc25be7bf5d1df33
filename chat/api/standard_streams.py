"""A turn for programs that speak a standard: AG-UI events or the AI SDK's UI message stream,
served from the same stored events as the JSON SSE stream (chat.api.sse), live while the turn
runs and replayed once it is over. Every frame has an SSE `id:`; a client that reconnects with
`Last-Event-ID` gets what it has not had yet, from the middle of a tool call or of the text
included (chat.turns.wires)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from chat import turns
from chat.api.sse import first_error, waiting_of, wire_stream
from chat.api.standards import ui_stream
from chat.api.views import conversations_owned
from chat.models import Conversation, Message
from chat.turns.wires import BadEventId, Cursor, Wire
from project.openapi import documented


async def _check_sent(after: Cursor, answer_id: int, wire: Wire) -> None:
    """Refuses an id the stream of `answer_id` never sent (a fresh `wire` numbers its stored
    events as a stream would): resumed after it, a client would get a replay with holes."""
    view, _position = await turns.snapshot(answer_id)
    stored = []
    for event in turns.replay(view):
        waiting = waiting_of(event)
        stored += [*wire.frames(event), *(wire.interrupt(waiting) if waiting else ())]
    after.check_sent(stored, text=len(view.content), running=view.state in Message.OPEN_STATES)


class _AguiErrors(BaseRenderer):
    """A refusal as the one event an AG-UI client reads as the run's failure."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None):
        from chat.api.standards import agui

        return agui.AguiWire.encode_error(first_error(data)).encode()


class _UiStreamErrors(_AguiErrors):
    """A refusal as the error chunk a UI message stream client reads."""

    def render(self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None):
        return ui_stream.UiStreamWire.encode_error(first_error(data)).encode()


LAST_EVENT_ID = OpenApiParameter(
    "Last-Event-ID",
    {"type": "string", "pattern": r"^(\d{1,12}-\d{1,6}-\d{1,12})?$"},
    OpenApiParameter.HEADER,
    description="The `id:` of the last frame received: the stream resumes right after it "
    "(empty: from the start).",
)


class _StandardStreamView(APIView):
    make_wire: Callable[[Conversation, Message], Wire]
    stream_headers: dict[str, str] = {}

    def get(self, request: Request, conversation_id: Any, message_id: int) -> Any:
        conversation = get_object_or_404(conversations_owned(request.user), pk=conversation_id)
        answer = get_object_or_404(
            Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT),
            pk=message_id,
        )
        after = None
        # Empty, as EventSource sends it before any id arrived: from the start.
        if last_event_id := request.headers.get("Last-Event-ID", ""):
            try:
                after = Cursor.parse(last_event_id)
                async_to_sync(_check_sent)(
                    after, answer.pk, type(self).make_wire(conversation, answer)
                )
            except BadEventId as problem:
                raise ValidationError({"Last-Event-ID": str(problem)}) from None
        wire = type(self).make_wire(conversation, answer)
        stream = StreamingHttpResponse(
            wire_stream(conversation, answer.pk, wire, after), content_type="text/event-stream"
        )
        stream["Cache-Control"] = "no-cache"
        stream["X-Accel-Buffering"] = "no"
        for name, value in self.stream_headers.items():
            stream[name] = value
        return stream


def _agui_wire(conversation: Conversation, answer: Message) -> Wire:
    # Imported by the first AG-UI stream: ag-ui-protocol's models are about 7 MiB a process,
    # and a process that serves pages and sockets never builds one.
    from chat.api.standards import agui

    return agui.AguiWire(thread_id=str(conversation.pk), run_id=str(answer.pk))


def _ui_stream_wire(conversation: Conversation, answer: Message) -> Wire:
    return ui_stream.UiStreamWire(message_id=str(answer.pk))


# One server-sent event of a standard stream, as a client parses it: `data` is the standard's
# JSON event (or `[DONE]`), `id` the frame's position for Last-Event-ID.
SSE_FRAME = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": r"^\d{1,12}-\d{1,6}-\d{1,12}$"},
        "event": {"type": "string"},
        "data": {"type": "string"},
    },
    "required": ["data"],
}

STREAM_PARAMETERS = [
    LAST_EVENT_ID,
    OpenApiParameter(
        "message_id",
        {"type": "integer", "minimum": 1},
        OpenApiParameter.PATH,
        description="The answer's id (`message_id` of the turn's `turn` event).",
    ),
]


@documented(
    responses={(200, "text/event-stream"): SSE_FRAME},
    parameters=STREAM_PARAMETERS,
    description=(
        "One answer's turn as AG-UI events over server-sent events (https://docs.ag-ui.com): "
        "RUN_STARTED, STEP_STARTED/FINISHED per status line, TOOL_CALL_START/ARGS/END/RESULT, "
        "TEXT_MESSAGE_START/CONTENT/END, CUSTOM `status`, `feedback`, `progress` and "
        "`decision`, then "
        "RUN_FINISHED (with an interrupt while the turn waits for approval) or RUN_ERROR. "
        "Live while the turn runs, replayed once it is over; every frame has an `id:`, and "
        "`Last-Event-ID` resumes right after that frame."
    ),
)
class AguiStream(_StandardStreamView):
    renderer_classes = [JSONRenderer, _AguiErrors]
    make_wire = staticmethod(_agui_wire)


@documented(
    responses={(200, "text/event-stream"): SSE_FRAME},
    parameters=STREAM_PARAMETERS,
    description=(
        "One answer's turn as the AI SDK's UI message stream v1 (header "
        "`x-vercel-ai-ui-message-stream: v1`): start, start-step, text-start/delta/end, "
        "finish-step, "
        "tool-input-start/available, tool-output-available (or -error), `data-status`, "
        "`data-feedback`, `data-progress` and `data-decision` parts, then finish (after an "
        "`error` part if the turn failed) and `[DONE]`. Live while the turn runs, replayed once "
        "it is over; every frame has an `id:`, and `Last-Event-ID` resumes right after it "
        "(inside the answer's text: `reset-step`, then the text part again with the text "
        "the client had)."
    ),
)
class UiMessageStream(_StandardStreamView):
    renderer_classes = [JSONRenderer, _UiStreamErrors]
    make_wire = staticmethod(_ui_stream_wire)
    stream_headers = ui_stream.HEADERS
