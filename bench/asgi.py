"""Glassbox's ASGI application plus a bare relay consumer, served by one Daphne so the two are
measured side by side: the relay streams the same model answer through the same openai client
and channel layer, and only forwards each delta."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from project.asgi import application as glassbox

# Django is set up by importing Glassbox's application; only then can the rest be imported.
assert glassbox is not None

from channels.generic.websocket import AsyncWebsocketConsumer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.urls import path  # noqa: E402

from chat.socket.routing import websocket_urlpatterns  # noqa: E402
from chat.socket.session import socket_session_stack  # noqa: E402
from chat.turns.deps import configured_client  # noqa: E402


class RelayConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.group = f"relay-{self.channel_name.replace('!', '-')}"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def receive(self, text_data=None, bytes_data=None) -> None:
        self.task = asyncio.create_task(self.relay(json.loads(text_data)["message"]))

    async def relay(self, question: str) -> None:
        stream = await configured_client().chat.completions.create(
            model=settings.GLASSBOX_MODEL,
            messages=[{"role": "user", "content": question}],
            stream=True,
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                content = chunk.choices[0].delta.content
                await self.channel_layer.group_send(
                    self.group, {"type": "relay.text", "content": content}
                )
        await self.channel_layer.group_send(self.group, {"type": "relay.done"})

    async def relay_text(self, message) -> None:
        await self.send(text_data=json.dumps({"type": "text", "content": message["content"]}))

    async def relay_done(self, message) -> None:
        await self.send(text_data=json.dumps({"type": "done"}))


# Channels' stubs type routes as its own; Django's path() is what it accepts, with ASGI
# applications where Django's stubs expect views.
ROUTES: list[Any] = [
    path("ws/bench/relay/", RelayConsumer.as_asgi()),  # type: ignore[arg-type]
    *websocket_urlpatterns,
]
application = ProtocolTypeRouter(
    {
        "http": get_asgi_application(),
        "websocket": AllowedHostsOriginValidator(socket_session_stack(URLRouter(ROUTES))),
    }
)
