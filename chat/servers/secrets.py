"""The key that encrypts users' OAuth tokens at rest (Fernet: AES with an HMAC, so a changed
ciphertext is refused rather than read). GLASSBOX_TOKEN_KEY holds it; only DEBUG and the
offline demo may fall back to a key made from SECRET_KEY, so a production site that forgot
it stops at start-up instead of storing tokens under a guessable key."""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

DEMO_MODEL = "glassbox-demo"
MISSING = (
    "GLASSBOX_TOKEN_KEY is not set: users' OAuth tokens for MCP servers are encrypted with "
    'it. Make one with: python -c "from cryptography.fernet import Fernet; '
    'print(Fernet.generate_key().decode())"'
)


class Unreadable(Exception):
    """A stored secret that this key did not write (the key changed, or the row was edited)."""


def token_key() -> Fernet:
    """The configured key; raises ImproperlyConfigured, naming the setting."""
    return _fernet(settings.GLASSBOX_TOKEN_KEY, settings.SECRET_KEY, _may_fall_back())


def _may_fall_back() -> bool:
    return bool(settings.DEBUG) or settings.GLASSBOX_MODEL == DEMO_MODEL


@cache
def _fernet(key: str, secret_key: str, fall_back: bool) -> Fernet:
    # cryptography (about 6 MiB) is loaded by the first secret sealed or read, not with
    # every process that imports this module.
    from cryptography.fernet import Fernet

    if not key:
        if not fall_back:
            raise ImproperlyConfigured(MISSING)
        digest = hashlib.sha256(b"glassbox-token-key:" + secret_key.encode()).digest()
        return Fernet(base64.urlsafe_b64encode(digest))
    try:
        return Fernet(key)
    except ValueError:
        raise ImproperlyConfigured(
            "GLASSBOX_TOKEN_KEY is not a Fernet key (32 bytes, URL-safe base64)"
        ) from None


def seal(text: str) -> str:
    return token_key().encrypt(text.encode()).decode("ascii")


def unseal(sealed: str) -> str:
    from cryptography.fernet import InvalidToken

    try:
        return token_key().decrypt(sealed.encode("ascii")).decode()
    except InvalidToken:
        raise Unreadable from None
