"""The client the MCP conformance suite's authorization scenarios drive (`make
conformance-auth`): Glassbox's per-user OAuth connection (chat.agent.mcp.oauth: the SDK's
OAuth client as Glassbox configures it, its registration choices, its per-user session)
against the suite's test servers. The suite runs `client.py <server-url>` with
MCP_CONFORMANCE_SCENARIO set, and MCP_CONFORMANCE_CONTEXT (JSON) where a scenario gives
credentials (an admin-entered client).

The person who grants access is scripted: the suite's authorization server approves at
once, so "opening the link" is one request whose redirect carries the code, as the
callback view would receive it. The client-credentials scenarios declare a shared server
with Glassbox's own machine grant (chat.agent.mcp.machine_auth) instead. Tokens are kept in
memory here (their encrypted storage is tested by tests/chat/test_mcp_oauth.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
# The suite's authorization servers accept this URL as a client ID metadata document.
os.environ.setdefault(
    "GLASSBOX_OAUTH_CLIENT_METADATA_URL", "https://conformance-test.local/client-metadata.json"
)

import django  # noqa: E402

django.setup()

import httpx2  # noqa: E402
from mcp.client.auth import AuthorizationCodeResult  # noqa: E402

from chat.agent.mcp.asker import NotConnected  # noqa: E402
from chat.agent.mcp.config import ServerSpec, spec_from_mapping  # noqa: E402
from chat.agent.mcp.connections import Pool  # noqa: E402
from chat.agent.mcp.machine_auth import MemoryTokens  # noqa: E402
from chat.agent.mcp.oauth import UserPool  # noqa: E402
from chat.servers.oauth_client import deployment_client  # noqa: E402

logger = logging.getLogger("conformance")


class ScriptedPerson:
    """An Asker (chat.agent.mcp.asker) whose user opens every link at once."""

    user_id = 1
    wait_seconds = 20.0
    client = deployment_client()

    def __init__(self, storage: MemoryTokens) -> None:
        self._storage = storage
        self._answer: AuthorizationCodeResult | None = None

    def storage(self, spec: ServerSpec) -> MemoryTokens:
        return self._storage

    async def ask(self, spec: ServerSpec, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=10) as browser:
            response = await browser.get(authorization_url)
        back = parse_qs(urlsplit(response.headers.get("location", "")).query)
        if "code" not in back:
            raise NotConnected(f"no code came back (HTTP {response.status_code})")
        self._answer = AuthorizationCodeResult(
            code=back["code"][0],
            state=back.get("state", [None])[0],
            iss=back.get("iss", [None])[0],
        )

    async def answer(self, spec: ServerSpec, authorization_url: str) -> AuthorizationCodeResult:
        if self._answer is None:
            raise NotConnected("not answered")
        answer, self._answer = self._answer, None
        return answer

    async def settled(self, spec: ServerSpec, connected: bool, reason: str) -> None:
        logger.info("connected" if connected else f"not connected: {reason}")


def machine_declaration(url: str, context: dict) -> ServerSpec:
    """A shared server Glassbox itself is authorized for (client credentials); the private
    key reaches the declaration as an environment variable's name, as in production."""
    grant = {"client_id": context["client_id"]}
    if context.get("private_key_pem"):
        os.environ["CONFORMANCE_PRIVATE_KEY"] = context["private_key_pem"]
        grant["private_key_env"] = "CONFORMANCE_PRIVATE_KEY"
        grant["signing_algorithm"] = context.get("signing_algorithm", "RS256")
    else:
        grant["client_secret"] = context["client_secret"]
    return spec_from_mapping({"name": "conformance", "url": url, "client_credentials": grant})


def declaration(url: str) -> ServerSpec:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if os.environ.get("MCP_CONFORMANCE_SCENARIO", "").startswith("auth/client-credentials"):
        return machine_declaration(url, context)
    data: dict = {"name": "conformance", "url": url, "auth": "oauth"}
    if context.get("client_id"):
        data["oauth_client"] = {
            key: context[key] for key in ("client_id", "client_secret") if context.get(key)
        }
    return spec_from_mapping(data)


async def main(url: str) -> int:
    spec = declaration(url)
    # A machine grant is the shared servers' pool; a person's grant is the per-user one.
    pool = Pool() if spec.client_credentials else UserPool()
    person = ScriptedPerson(MemoryTokens())
    try:
        if isinstance(pool, UserPool):
            (connection, *_) = await pool.connect([spec], person) or [None]
        else:
            (connection, *_) = await pool.connect([spec]) or [None]
        if connection is None or connection.client is None:
            logger.error("not connected")
            return 1
        for tool in connection.listed:
            result = await connection.call(tool.name, {}, None)  # type: ignore[arg-type]
            logger.info("called %s: error=%s", tool.name, result.is_error)
        return 0
    finally:
        await pool.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    sys.exit(asyncio.run(main(sys.argv[1])))
