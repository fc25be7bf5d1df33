"""An MCP server that requires OAuth, with its own authorization server, built from the `mcp`
SDK's server auth pieces (mcp.server.auth) like a team's server would be: protected resource
metadata, authorization server metadata, dynamic registration, PKCE, refresh, tokens bound
to the resource they were asked for (RFC 8707), and a consent page where a person grants or
denies. Its tool `whoami` answers with the person the token acts for.

`python -m tests.support.oauth_server --http PORT`. By environment: OAUTH_BENCH_EXPIRES
(seconds an access token lives; 3600), OAUTH_BENCH_TOLD_EXPIRES (what the client is told
it lives), OAUTH_BENCH_WRONG_ISS=1 (the authorization answer
names another issuer, as a mix-up attack would)."""

from __future__ import annotations

import argparse
import html
import os
import secrets
import time

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

SCOPES = ["notes:read", "notes:write"]


class Authority(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """The authorization server's memory: clients, pending consents, codes and tokens. (The
    SDK's defaults refuse the grants it does not give, such as an identity assertion's.)"""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.expires = int(os.environ.get("OAUTH_BENCH_EXPIRES", "3600"))

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        # The server may widen what a client registered for (RFC 7591 §3.2.1): every scope
        # it has, so a later step-up may ask for more than the first authorization did.
        client_info.scope = " ".join(SCOPES)
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        request = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.pending[request] = (client.client_id, params)
        return f"{self.issuer}/consent?request={request}"

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._tokens(
            client.client_id,
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject,
        )

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._tokens(
            client.client_id,
            scopes or refresh_token.scopes,
            refresh_token.resource,
            refresh_token.subject,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)

    def _tokens(self, client_id, scopes, resource, subject) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires_at = int(time.time()) + self.expires
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires_at,
            resource=resource,
            subject=subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(
            access_token=access,
            # What the client is told may differ from what is enforced: told 0, a client
            # refreshes before every request.
            expires_in=int(os.environ.get("OAUTH_BENCH_TOLD_EXPIRES", self.expires)),
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    def answer(self, request: str, person: str, grant: bool) -> str:
        """Where the person's browser goes next: back to the client, with a code or a
        refusal, and the issuer's name (RFC 9207)."""
        client_id, params = self.pending.pop(request)
        iss = "http://wrong.example" if os.environ.get("OAUTH_BENCH_WRONG_ISS") else self.issuer
        if not grant:
            return construct_redirect_uri(
                str(params.redirect_uri), error="access_denied", state=params.state, iss=iss
            )
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPES[0]],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=person,
        )
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=iss
        )


def build(port: int) -> tuple[MCPServer, Authority]:
    issuer = f"http://127.0.0.1:{port}"
    authority = Authority(issuer)
    server = MCPServer(
        "oauth-bench",
        auth_server_provider=authority,
        auth=AuthSettings(
            # As text: the SDK types them as URLs, whose form adds a slash to the issuer
            # that the authorization response's `iss` would then not match.
            issuer_url=issuer,  # type: ignore[arg-type]
            resource_server_url=f"{issuer}/mcp",  # type: ignore[arg-type]
            validate_token_resource=True,
            required_scopes=[SCOPES[0]],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=[SCOPES[0]]
            ),
        ),
    )

    @server.tool(title="Write a note")
    async def write_note(text: str) -> str:
        """Writes a note: it needs the notes:write scope (asked for by step-up)."""
        token = get_access_token()
        return f"{token.subject if token else 'nobody'} wrote {text}"

    @server.tool(title="Who am I")
    async def whoami() -> str:
        """Says whom the token acts for."""
        token = get_access_token()
        return f"you are {token.subject if token else 'nobody'}"

    @server.custom_route("/consent", methods=["GET", "POST"])
    async def consent(request: Request) -> Response:
        if request.method == "GET":
            ask = html.escape(request.query_params.get("request", ""))
            return HTMLResponse(
                "<!doctype html><title>Consent</title><h1>Allow Glassbox?</h1>"
                f'<form method="post"><input type="hidden" name="request" value="{ask}">'
                '<label>Who you are <input name="person" value="alice"></label>'
                '<button name="decision" value="grant">Grant</button>'
                '<button name="decision" value="deny">Deny</button></form>'
            )
        form = await request.form()
        target = authority.answer(
            str(form["request"]), str(form.get("person", "alice")), form.get("decision") == "grant"
        )
        return RedirectResponse(target, status_code=302)

    return server, authority


async def whole_body(receive) -> bytes:
    """An ASGI request's body, read to its end."""
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def replaying(body: bytes, receive):
    """A `receive` that gives the app the body already read, then what comes after."""
    sent = False

    async def again():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def needing_write_scope(app, authority: Authority, issuer: str):
    """The MCP endpoint answers a call of `write_note` with `403 insufficient_scope` unless
    the token holds notes:write: the step-up the MCP authorization spec describes."""

    async def guarded(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        body = await whole_body(receive)
        headers = dict(scope["headers"])
        bearer = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
        token = authority.access.get(bearer)
        if b'"write_note"' in body and token is not None and SCOPES[1] not in token.scopes:
            challenge = (
                f'Bearer error="insufficient_scope", scope="{" ".join(SCOPES)}", '
                f'resource_metadata="{issuer}/.well-known/oauth-protected-resource/mcp"'
            )
            response = Response(
                '{"error": "insufficient_scope"}',
                status_code=403,
                headers={"WWW-Authenticate": challenge},
                media_type="application/json",
            )
            return await response(scope, receive, send)
        return await app(scope, replaying(body, receive), send)

    return guarded


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    port = parser.parse_args().http
    server, authority = build(port)
    app = needing_write_scope(server.streamable_http_app(), authority, f"http://127.0.0.1:{port}")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
