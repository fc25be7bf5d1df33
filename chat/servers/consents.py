"""The authorizations turns wait for: opened when a turn shows its user the link, answered by
the callback the authorization server sends the user's browser to (in any process; the
waiting turn is woken over the channel layer), refused when nobody answers in time."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.servers.models import McpConsent, McpGrantRecord
from chat.servers.secrets import seal

logger = logging.getLogger("glassbox.mcp")

Action = McpGrantRecord.Action


def state_hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def consent_group(digest: str) -> str:
    return f"mcp-consent.{digest[:48]}"


def asked_scopes(authorization_url: str) -> str:
    return parse_qs(urlsplit(authorization_url).query).get("scope", [""])[0]


async def consent_open(*, user_id: int, server: str, authorization_url: str) -> McpConsent:
    """Records an authorization a turn waits for; the user's link finds it by server."""
    state = parse_qs(urlsplit(authorization_url).query).get("state", [""])[0]
    deadline = timezone.now() + timedelta(seconds=settings.GLASSBOX_OAUTH_CONSENT_TIMEOUT)
    return await McpConsent.objects.acreate(
        user_id=user_id,
        server=server,
        state_hash=state_hash(state),
        authorization_url=authorization_url,
        scopes=asked_scopes(authorization_url),
        deadline=deadline,
    )


def consent_waiting(*, user_id: int, server: str) -> McpConsent | None:
    """The user's newest authorization at this server that a turn still waits for."""
    return (
        McpConsent.objects.filter(
            user_id=user_id, server=server, answered_at=None, deadline__gt=timezone.now()
        )
        .order_by("-created_at")
        .first()
    )


class ConsentRefused(Exception):
    """The user denied it at the authorization server, or it came back broken."""


def consent_answer(*, user_id: int, state: str, code: str, iss: str, error: str) -> McpConsent:
    """The authorization server's answer, as the user's browser brought it back: kept for the
    waiting turn, which is woken in whichever process it runs. Raises McpConsent.DoesNotExist
    for a state this user was not asked (or that was answered already, or is past its
    deadline): nothing is saved then."""
    with transaction.atomic():
        consent = McpConsent.objects.select_for_update().get(
            user_id=user_id,
            state_hash=state_hash(state),
            answered_at=None,
            deadline__gt=timezone.now(),
        )
        consent.answered_at = timezone.now()
        consent.code = seal(code) if code else ""
        consent.iss = iss[:500]
        consent.error = error[:100] if error or not code else ""
        if not code and not consent.error:
            consent.error = "no_code"
        consent.save(update_fields=["answered_at", "code", "iss", "error"])
        if consent.error:
            McpGrantRecord.objects.create(
                user_id=user_id,
                server=consent.server,
                action=Action.REFUSED,
                scopes=consent.scopes,
                detail=consent.error,
            )
    layer = get_channel_layer()
    if layer is not None:
        try:
            async_to_sync(layer.group_send)(
                consent_group(consent.state_hash), {"type": "consent.answered"}
            )
        except Exception:
            # The waiting turn also reads the row again every few seconds.
            logger.warning("could not tell the waiting turn of a consent", exc_info=True)
    return consent


def consent_expired(consent_id: int) -> None:
    """A consent nobody answered in time: recorded as refused, and no longer answerable."""
    with transaction.atomic():
        consent = (
            McpConsent.objects.select_for_update().filter(pk=consent_id, answered_at=None).first()
        )
        if consent is None:
            return
        consent.answered_at = timezone.now()
        consent.error = "timed_out"
        consent.save(update_fields=["answered_at", "error"])
        McpGrantRecord.objects.create(
            user_id=consent.user_id,
            server=consent.server,
            action=Action.REFUSED,
            scopes=consent.scopes,
            detail="timed_out",
        )
