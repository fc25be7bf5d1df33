"""A shared MCP server that Glassbox itself is authorized for (OAuth client credentials,
machine to machine): the declaration's `client_credentials`, checked here, and the `mcp`
SDK's provider that gets and renews the token for every connection to the server.

A client secret is a secret of the declaration, like its headers, or (as a private key always
is) named by the declaration: an environment variable or a file, read when a session opens.
The admin's form takes only the names. Tokens live in this process's memory only, in the
store of the server's connection (chat.agent.mcp.connections), so each process asks for its
own token, a restart asks again, and a declaration changed or removed takes its token with
it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

KEYS = {
    "client_id", "client_secret", "client_secret_env", "client_secret_file", "method",
    "private_key_env", "private_key_file", "signing_algorithm", "scope", "issuer",
}  # fmt: skip
# Where a client secret is: in the declaration, or named by it.
SECRET_PLACES = ("client_secret", "client_secret_env", "client_secret_file")
KEY_PLACES = ("private_key_env", "private_key_file")
SECRET_METHODS = ("client_secret_basic", "client_secret_post")
JWT_METHOD = "private_key_jwt"
ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256")


class MachineConfigError(ValueError):
    """A client_credentials declaration that cannot be used; the message names the field."""


class UnreadableSecret(MachineConfigError):
    """The client secret's variable or file, named by the declaration, cannot be read."""


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
    keys = [key for key in KEY_PLACES if data.get(key)]
    secrets = [place for place in SECRET_PLACES if data.get(place)]
    if secrets and keys:
        raise MachineConfigError(f"{where}: give a 'client_secret' or a private key, not both")
    if len(keys) > 1:
        raise MachineConfigError(f"{where}: give 'private_key_env' or 'private_key_file'")
    if len(secrets) > 1:
        raise MachineConfigError(
            f"{where}: give one of 'client_secret', 'client_secret_env' or 'client_secret_file'"
        )
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
    elif secrets:
        if data.setdefault("method", SECRET_METHODS[0]) not in SECRET_METHODS:
            raise MachineConfigError(
                f"{where}: a secret is sent as 'client_secret_basic' or 'client_secret_post'"
            )
        if "signing_algorithm" in data:
            raise MachineConfigError(f"{where}: 'signing_algorithm' is for a private key")
        _client_secret(data, where)
    else:
        raise MachineConfigError(
            f"{where} needs a 'client_secret', 'private_key_env' or 'private_key_file' (or "
            "'client_secret_env' or 'client_secret_file')"
        )
    return data


def _private_key(data: dict[str, str], where: str) -> str:
    """The PEM key the declaration points at; the message names the place, never the key."""
    return _named(data, "private_key", where, MachineConfigError)


def _client_secret(data: dict[str, str], where: str) -> str:
    if secret := data.get("client_secret"):
        return secret
    # A secret file ends with a newline more often than not; no secret does.
    return _named(data, "client_secret", where, UnreadableSecret).strip()


def _named(data: dict[str, str], kind: str, where: str, error: type[MachineConfigError]) -> str:
    """The value the declaration's `<kind>_env` or `<kind>_file` names."""
    if name := data.get(f"{kind}_env"):
        value = os.environ.get(name, "")
        if not value.strip():
            raise error(f"{where}: the environment variable {name!r} is not set")
        return value
    path = data[f"{kind}_file"]
    try:
        value = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{where}: cannot read the file {path!r}: {exc.strerror}") from None
    if not value.strip():
        raise error(f"{where}: the file {path!r} is empty")
    return value


def described(grant: dict[str, str]) -> str:
    """Which credentials a declaration uses, for operators: names, never a value."""
    if name := grant.get("private_key_env") or grant.get("client_secret_env"):
        where = f"from the environment variable {name}"
    elif path := grant.get("private_key_file") or grant.get("client_secret_file"):
        where = f"from the file {path}"
    else:
        where = "in the declaration"
    what = "private key" if grant.get("method") == JWT_METHOD else "secret"
    return f"client {grant.get('client_id', '')} ({grant.get('method', '')}), {what} {where}"


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


def machine_auth(url: str, grant: dict[str, str], storage: MemoryTokens) -> httpx2.Auth:
    """The SDK's provider for a server declared with `client_credentials` (checked), keeping
    its token in `storage` (the connection's: a reconnect reuses the token it still holds)."""
    # Imported here: the SDK's client loads only once a server is used (a plain site,
    # however it is configured, never pays for it).
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

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
        client_secret=_client_secret(grant, "'client_credentials'"),
        token_endpoint_auth_method=grant["method"],  # type: ignore[arg-type]
        scope=scope,
        issuer=issuer,
    )
