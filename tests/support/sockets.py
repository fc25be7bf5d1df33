"""The conversation socket as a test drives it: through the full ASGI application."""

from __future__ import annotations

import asyncio
import json
import re

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from chat.turns.registry import finish_all, running, stop
from tests.support.matching import found


def session_cookie_for(user) -> bytes:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(
    conversation_id, user=None, *, as_json: bool = False, headers=(), query: str = ""
) -> WebsocketCommunicator:
    """A socket to the full ASGI app (origin check, auth, routing), logged in as user; as_json
    asks for JSON events with the glassbox.json subprotocol; headers are a browser's extra
    ones (Accept-Language); query is the URL's, as the page writes it (`lang=it`)."""
    from project.asgi import application

    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), *headers]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(session_cookie_for)(user)))
    return WebsocketCommunicator(
        application,
        f"/ws/c/{conversation_id}/" + (f"?{query}" if query else ""),
        headers=headers,
        subprotocols=["glassbox.json"] if as_json else None,
    )


async def open_socket(conversation, user, as_json: bool = False, headers=(), query: str = ""):
    socket = await connect(conversation.pk, user, as_json=as_json, headers=headers, query=query)
    # Not the communicator's 1 s: a busy machine takes longer to open a test's first socket.
    connected, subprotocol = await socket.connect(timeout=10)
    assert connected
    assert subprotocol == ("glassbox.json" if as_json else None)
    return socket


async def ask(socket, text: str, **fields) -> None:
    """What the page's form sends (htmx adds HEADERS)."""
    await socket.send_to(
        text_data=json.dumps({"message": text, "HEADERS": {"HX-Request": "true"}, **fields})
    )


def line_icons(frames: list[str]) -> list[str]:
    """Between the question and the folded answer: each line's icon, and "text" for each
    frame of answer text, in the order they came."""
    return [
        "text" if is_text(frame) else found(r'aria-hidden="true">(.+?)</span>', frame)
        for frame in frames[1:-1]
        if is_text(frame) or 'class="line' in frame
    ]


def is_final(frame: str) -> bool:
    return 'class="message assistant state-' in frame and "state-streaming" not in frame


async def frames_until_done(socket, limit: float = 10) -> list[str]:
    frames = []
    async with asyncio.timeout(limit):
        while True:
            frames.append(await socket.receive_from(timeout=limit))
            if is_final(frames[-1]):
                return frames


async def json_until_done(socket, limit: float = 10) -> list[dict]:
    events = []
    async with asyncio.timeout(limit):
        while True:
            events.append(json.loads(await socket.receive_from(timeout=limit)))
            if events[-1]["type"] == "done":
                return events


async def json_until_waiting(socket, limit: float = 10) -> list[dict]:
    """A turn's events up to its call's pause for approval."""
    events: list[dict] = []
    async with asyncio.timeout(limit):
        while not events or events[-1].get("state") != "waiting":
            events.append(json.loads(await socket.receive_from(timeout=limit)))
    return events


async def paused_turn(conversation, user, question: str):
    """A JSON socket whose turn waits for approval of a tool call, and the turn's events."""
    socket = await open_socket(conversation, user, as_json=True)
    await ask(socket, question)
    return socket, await json_until_waiting(socket)


async def finish_turns() -> None:
    await finish_all()


async def stop_turns_left_running(limit: float = 10) -> None:
    """Stops what a test left running (it failed before its turns ended) and waits for each
    to end, in the test's own loop: not cancelled with the loop's other tasks in no set order
    when it closes, and not found by the next test (the registry outlives a loop)."""
    for answer_id in running():
        stop(answer_id)
    async with asyncio.timeout(limit):
        await finish_all()


async def json_turn(conversation, user, question: str, limit: float = 20) -> list[dict]:
    """One question over a JSON socket: its events until `done`, the turn finished."""
    socket = await open_socket(conversation, user, as_json=True)
    await ask(socket, question)
    events = await json_until_done(socket, limit)
    await finish_turns()
    await socket.disconnect()
    return events


async def turn_frames(conversation, user, question: str, *, as_json: bool = False) -> list:
    """Asks on a fresh socket and returns every frame up to the folded answer."""
    socket = await open_socket(conversation, user, as_json=as_json)
    await ask(socket, question)
    frames = await (json_until_done(socket) if as_json else frames_until_done(socket))
    await finish_turns()
    await socket.disconnect()
    return frames


BLOCKS = re.compile(r'<div id="answer-\d+-blocks" class="blocks">(.*?)</div>', re.S)
APPENDED = re.compile(r'hx-swap-oob="beforeend:#answer-\d+-blocks">(.*?)</div>', re.S)
TAIL = re.compile(r'<div id="answer-\d+-tail" class="tail"[^>]*>(.*?)</div>', re.S)


def is_text(frame: str) -> bool:
    """A live frame of answer text: settled blocks appended, or the tail replaced."""
    return bool(APPENDED.search(frame) or TAIL.search(frame))


def live_render(frames: list[str]) -> str:
    """The answer as the page built it live: the snapshot's blocks (if it joined mid-turn),
    then every block appended, up to the final frame."""
    shown = ""
    for frame in frames[:-1]:
        if "state-streaming" in frame:
            snapshot = BLOCKS.search(frame)
            shown += snapshot.group(1) if snapshot else ""
        shown += "".join(APPENDED.findall(frame))
    return shown


def final_render(frames: list[str]) -> str:
    return found(BLOCKS, frames[-1])


async def frames_until(socket, found, limit: float = 10) -> list[str]:
    """A page's frames up to the first one `found(frame)` holds."""
    frames: list[str] = []
    async with asyncio.timeout(limit):
        while not frames or not found(frames[-1]):
            frames.append(await socket.receive_from(timeout=limit))
    return frames


async def next_frame(socket, wait: float = 5) -> str:
    """The socket's next frame about its own conversation: a cue that another of the user's
    conversations changed (the sidebar's) is passed over."""
    while True:
        frame = await socket.receive_from(timeout=wait)
        if 'id="sidebar-stale"' not in frame:
            return frame


async def everything_sent(socket, quiet: float = 0.5) -> list[str]:
    """The frames a socket was sent until it goes quiet for `quiet` seconds."""
    frames = []
    while not await socket.receive_nothing(timeout=quiet):
        frames.append(await socket.receive_from(timeout=5))
    return frames
