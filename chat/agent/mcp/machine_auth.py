"""A shared MCP server that Glassbox itself is authorized for (OAuth client credentials,
machine to machine): the declaration's `client_credentials`, checked here, and the `mcp`
SDK's provider that gets and renews the token for every connection to the server.

A client secret is a secret of the declaration, like its headers. A private key is never in
the declaration: it names an environment variable or a file, read when a session opens.
Tokens live in this process's memory only (one store per server declaration), so each
process asks for its own token and a restart asks again."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

KEYS = {
    "client_id", "client_secret", "method", "private_key_env", "private_key_file",
    "signing_algorithm", "scope", "issuer",
}  # fmt: skip
SECRET_METHODS = ("client_secret_basic", "client_secret_post")
JWT_METHOD = "private_key_jwt"
ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256")


class MachineConfigError(ValueError):
    """A client_credentials declaration that cannot be used; the message names the field."""


def checked(value: Any, where: str) -> dict[str, str]:
    """The declaration's `client_credentials`, checked: a client id and either a secret
    (sent as `method` says: client_secret_basic, the default, or client_secret_post) or a
    private key by reference (`private_key_env` or `private_key_file`), signed assertions
    being `private_key_jwt`. Never echoes a value back."""
    where = f"{where}: 'client_credentials'"
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise MachineConfigError(f"{where} must be an object of strings")
    data = {key: text.strip() for key, text in value.items()}
    if unknown := set(data) - KEYS:
        raise MachineConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    if not data.get("client_id"):
        raise MachineConfigError(f"{where} needs a 'client_id'")
    keys = [key for key in ("private_key_env", "private_key_file") if data.get(key)]
    if data.get("client_secret") and keys:
        raise MachineConfigError(f"{where}: give a 'client_secret' or a private key, not both")
    if len(keys) > 1:
        raise MachineConfigError(f"{where}: give 'private_key_env' or 'private_key_file'")
    if data.get("issuer") and not re.match(r"^https?://[^\s/]+", data["issuer"]):
        raise MachineConfigError(
            f"{where}: 'issuer' is the authorization server's http:// or https:// issuer URL"
        )
    if keys:
        data.setdefault("method", JWT_METHOD)
        if data["method"] != JWT_METHOD:
            raise MachineConfigError(f"{where}: a private key signs with 'private_key_jwt'")
        if data.setdefault("signing_algorithm", "RS256") not in ALGORITHMS:
            raise MachineConfigError(
                f"{where}: 'signing_algorithm' is one of {', '.join(ALGORITHMS)}"
            )
        _private_key(data, where)
    elif data.get("client_secret"):
        if data.setdefault("method", SECRET_METHODS[0]) not in SECRET_METHODS:
            raise MachineConfigError(
                f"{where}: a secret is sent as 'client_secret_basic' or 'client_secret_post'"
            )
        if "signing_algorithm" in data:
            raise MachineConfigError(f"{where}: 'signing_algorithm' is for a private key")
    else:
        raise MachineConfigError(
            f"{where} needs a 'client_secret', 'private_key_env' or 'private_key_file'"
        )
    return data


def _private_key(data: dict[str, str], where: str) -> str:
    """The PEM key the declaration points at; the message names the place, never the key."""
    if name := data.get("private_key_env"):
        key = os.environ.get(name, "")
        if not key.strip():
            raise MachineConfigError(f"{where}: the environment variable {name!r} is not set")
        return key
    path = data["private_key_file"]
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MachineConfigError(
            f"{where}: cannot read the file {path!r}: {exc.strerror}"
        ) from None


class MemoryTokens:
    """The SDK's TokenStorage, in this process's memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


# One store per declaration (its fingerprint): a reconnect reuses the token it still holds.
_stores: dict[str, MemoryTokens] = {}


def machine_auth(url: str, grant: dict[str, str], fingerprint: str) -> httpx2.Auth:
    """The SDK's provider for a server declared with `client_credentials` (checked)."""
    # Imported here: the SDK's client loads only once a server is used (a plain site,
    # however it is configured, never pays for it).
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    storage = _stores.setdefault(fingerprint, MemoryTokens())
    scope, issuer = grant.get("scope") or None, grant.get("issuer") or None
    if grant["method"] == JWT_METHOD:
        where = "'client_credentials'"
        signer = SignedJWTParameters(
            issuer=grant["client_id"],
            subject=grant["client_id"],
            signing_key=_private_key(grant, where),
            signing_algorithm=grant["signing_algorithm"],
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=grant["client_id"],
            assertion_provider=signer.create_assertion_provider(),
            scope=scope,
            issuer=issuer,
        )
    return ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=grant["client_id"],
        client_secret=grant["client_secret"],
        token_endpoint_auth_method=grant["method"],  # type: ignore[arg-type]
        scope=scope,
        issuer=issuer,
    )
