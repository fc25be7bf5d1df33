"""ASGI entry point: HTTP goes to Django, WebSockets to the chat consumers."""

from __future__ import annotations

import os
from typing import Any, cast

from django.core.asgi import get_asgi_application

from project.unused import DRF_EXTRAS, leave_out, let_in

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
leave_out(*DRF_EXTRAS)
# Django must be set up before the routing imports models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from chat.servers.heartbeat import watch_on_start  # noqa: E402
from chat.socket.routing import websocket_urlpatterns  # noqa: E402
from chat.socket.session import socket_session_stack  # noqa: E402
from chat.turns.shutdown import drain_on_sigterm  # noqa: E402
from project.heap import settle  # noqa: E402
from project.request_threads import ReusedRequestThreads  # noqa: E402
from project.warming import warm_aside  # noqa: E402

drain_on_sigterm()
# Each process opens its MCP servers when it starts, not at the first turn that needs them.
watch_on_start()
# A turn's templates (with everything they include), compiled before the first one needs them.
warm_aside(["chat/_assistant_message.html", "chat/_question.html", "chat/_title.html"])

request_threads = ReusedRequestThreads(django_asgi_app)
application = ProtocolTypeRouter(
    {
        "http": request_threads,
        # The socket reads its user itself, with the rest of what it opens on, in one trip
        # to the database thread (chat.socket.reads.opening): no auth middleware.
        "websocket": AllowedHostsOriginValidator(
            # Channels' stubs type routes as its own; Django's path() is what it accepts.
            socket_session_stack(URLRouter(cast(list[Any], websocket_urlpatterns)))
        ),
    }
)

let_in(*DRF_EXTRAS)
settle()
