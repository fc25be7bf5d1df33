"""Every socket joins its login session's group: logging out closes that session's open
sockets at once, wherever they are served."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver

from chat.turns.broadcast import group_send


def session_group(session_key: str) -> str:
    return f"session-{session_key}"


@receiver(user_logged_out)
def close_sockets_of_session(sender, request, user, **kwargs):
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        async_to_sync(group_send)(session_group(session_key), {"type": "session.ended"})
