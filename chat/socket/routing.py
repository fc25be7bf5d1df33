from __future__ import annotations

from django.urls import path

from chat.socket.consumer import ChatConsumer

websocket_urlpatterns = [
    # Channels' URLRouter takes ASGI applications where Django's stubs expect views.
    path("ws/c/<uuid:conversation_id>/", ChatConsumer.as_asgi()),  # type: ignore[arg-type]
]
