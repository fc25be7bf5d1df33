from __future__ import annotations

from django.urls import path

from chat.socket.consumer import ChatConsumer

websocket_urlpatterns = [
    path("ws/c/<uuid:conversation_id>/", ChatConsumer.as_asgi()),
]
