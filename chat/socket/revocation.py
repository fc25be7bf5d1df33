"""Every way to lose access closes the open sockets that depended on it, in every process,
through the channel layer. Each socket joins three groups: its user's (a password changed,
the user deactivated, deleted or erased), its login session's (logged out, the session
deleted or cleared) and its conversation's (deleted, erased, moved to another user).

A group is told once the change is committed: told earlier, a socket could still read the
old row, and a change rolled back takes nothing away. This is the first wall; the second is
the socket's own check before it shows a new turn (ChatConsumer.turn_started), for changes
made where no signal is sent (a raw SQL update). On the in-memory layer, which reaches no
other process, chat.socket.relay carries what a shell or a command takes away."""

from __future__ import annotations

import weakref
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models import Model
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from chat.conversations.access import conversations_closed
from chat.models import Conversation, Revocation
from chat.socket.reads import Refused
from chat.turns.broadcast import user_group
from project.groups import group_send

ACCESS_ENDED = "access.ended"
__all__ = ["end_access", "session_group", "user_group"]


def session_group(session_key: str) -> str:
    return f"session-{session_key}"


def end_access(group: str, reason: Refused) -> None:
    """Closes the group's sockets (4401 for a login, 4404 for a conversation) once the
    current transaction commits; at once outside one. Where the layer reaches only this
    process, the loss is also written down, with the change, for the others
    (chat.socket.relay)."""
    message = {"type": ACCESS_ENDED, "reason": reason.value}
    if settings.GLASSBOX_REVOCATION_POLL_SECONDS > 0:
        Revocation.objects.create(group=group, reason=reason.value)
    transaction.on_commit(lambda: async_to_sync(group_send)(group, message), robust=True)


# What a save about to happen takes away, from pre_save to post_save (the instance is
# only remembered while it is alive).
_losing: weakref.WeakKeyDictionary[Model, list[tuple[str, Refused]]] = weakref.WeakKeyDictionary()


def _changes(instance: Model, update_fields: Any, watched: tuple[str, ...]) -> dict | None:
    """The stored values of `watched` before this save, or None when the save cannot change
    them (a new row, or other fields only: a login's last_login, a rename)."""
    if instance._state.adding or instance.pk is None:
        return None
    if update_fields is not None and not set(update_fields) & set(watched):
        return None
    return type(instance)._base_manager.filter(pk=instance.pk).values(*watched).first()


@receiver(pre_save, sender=settings.AUTH_USER_MODEL)
def _user_changing(sender, instance, update_fields=None, **kwargs) -> None:
    # A new password ends every session (their hash no longer matches), deactivation ends
    # the user's access; reactivation gives nothing back to a socket already closed.
    before = _changes(instance, update_fields, ("password", "is_active"))
    if before is not None and (
        before["password"] != instance.password or (before["is_active"] and not instance.is_active)
    ):
        _losing[instance] = [(user_group(instance.pk), Refused.SESSION)]


@receiver(pre_save, sender=Conversation)
def _conversation_changing(sender, instance, update_fields=None, **kwargs) -> None:
    before = _changes(instance, update_fields, ("owner", "deleted_at"))
    if before is not None and (
        before["owner"] != instance.owner_id
        or (before["deleted_at"] is None and instance.deleted_at is not None)
    ):
        _losing[instance] = [(instance.group_name, Refused.CONVERSATION)]


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
@receiver(post_save, sender=Conversation)
def _saved(sender, instance, **kwargs) -> None:
    for group, reason in _losing.pop(instance, ()):
        end_access(group, reason)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL)
def _user_deleted(sender, instance, **kwargs) -> None:
    end_access(user_group(instance.pk), Refused.SESSION)


@receiver(post_delete, sender=Session)
def _session_deleted(sender, instance, **kwargs) -> None:
    """Logging out, a rotated key, a session deleted in admin or cleared as expired."""
    end_access(session_group(instance.session_key), Refused.SESSION)


@receiver(user_logged_out)
def _logged_out(sender, request, user, **kwargs) -> None:
    # Also for session engines whose rows are not Session models (cache, signed cookies).
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        end_access(session_group(session_key), Refused.SESSION)


@receiver(conversations_closed)
def _conversations_closed(sender, conversation_ids, **kwargs) -> None:
    for conversation_id in conversation_ids:
        end_access(Conversation.group_name_for(conversation_id), Refused.CONVERSATION)
