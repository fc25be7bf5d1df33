"""The OAuth test server (tests.support.oauth_server) whose authorization server also grants
client credentials (OAuth 2.1 §4.2), which the SDK's token endpoint does not: one client,
`CLIENT_ID` with `CLIENT_SECRET`, authenticated by HTTP Basic or in the form, or by a JWT
assertion (RFC 7523) signed with the key whose public half is MACHINE_PUBLIC_KEY (PEM), gets
a token for the resource it names, acting as itself. `whoami` then answers `you are <client
id>`, and `token_number` which of the tokens it granted (1 for the first) the call carried.

`python -m tests.support.machine_server --http PORT`."""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import time
from urllib.parse import parse_qs, unquote

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from tests.support.oauth_server import SCOPES, Authority, build, replaying, whole_body

CLIENT_ID = "glassbox-service"
CLIENT_SECRET = "s3cret-of-the-service"
# The machine tokens granted so far, in order.
GRANTED: list[str] = []


def _client(headers: dict[bytes, bytes], form: dict[str, str]) -> tuple[str, str]:
    basic = headers.get(b"authorization", b"").decode()
    if basic.startswith("Basic "):
        client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
        return unquote(client_id), unquote(secret)
    return form.get("client_id", ""), form.get("client_secret", "")


ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def _signed_by_client(form: dict[str, str], issuer: str) -> bool:
    """A client assertion from CLIENT_ID, for this authorization server, signed by its key."""
    key = os.environ.get("MACHINE_PUBLIC_KEY", "")
    if form.get("client_assertion_type") != ASSERTION or not key:
        return False
    try:
        claims = jwt.decode(
            form.get("client_assertion", ""),
            key,
            algorithms=["ES256", "RS256"],
            audience=[issuer, f"{issuer}/"],
            issuer=CLIENT_ID,
        )
    except jwt.InvalidTokenError:
        return False
    return claims.get("sub") == CLIENT_ID


def granting_client_credentials(app, authority: Authority):
    """Answers `grant_type=client_credentials` at /token; everything else goes to `app`."""

    async def token(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/token":
            return await app(scope, receive, send)
        body = await whole_body(receive)
        form = {key: values[0] for key, values in parse_qs(body.decode()).items()}
        if form.get("grant_type") != "client_credentials":
            return await app(scope, replaying(body, receive), send)
        by_secret = _client(dict(scope["headers"]), form) == (CLIENT_ID, CLIENT_SECRET)
        answer: dict[str, str | int]
        if not by_secret and not _signed_by_client(form, authority.issuer):
            status, answer = 401, {"error": "invalid_client"}
        else:
            access = secrets.token_urlsafe(24)
            GRANTED.append(access)
            scopes = form.get("scope", SCOPES[0]).split()
            authority.access[access] = AccessToken(
                token=access,
                client_id=CLIENT_ID,
                scopes=scopes,
                expires_at=int(time.time()) + 3600,
                resource=form.get("resource"),
                subject=CLIENT_ID,
            )
            status = 200
            answer = {"access_token": access, "token_type": "Bearer", "expires_in": 3600}
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    return token


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    port = parser.parse_args().http
    server, authority = build(port)

    @server.tool(title="Token number")
    async def token_number() -> str:
        """Which of the granted machine tokens this call carried (1 for the first)."""
        token = get_access_token()
        return str(GRANTED.index(token.token) + 1 if token and token.token in GRANTED else 0)

    app = granting_client_credentials(server.streamable_http_app(), authority)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
