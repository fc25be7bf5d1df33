"""The three ways to ask something of a conversation, as a test sends the same request over
each and reads the refusal: the socket (JSON events), the no-JavaScript form and the REST API."""

from __future__ import annotations

import html
import json
import re

from django.test import AsyncClient

from tests.support.sockets import open_socket

NOTICE = re.compile(r'<p class="notice error" role="status">(.*?)</p>', re.S)
API_PATHS = {
    "conversations": "/api/conversations/",
    "messages": "/api/conversations/{pk}/messages/",
    "approvals": "/api/conversations/{pk}/approvals/{call_id}/",
}


async def socket_refusal(conversation, user, text: str) -> str:
    """The error frame a JSON socket gets for `text`; the socket stays open (no 1011)."""
    socket = await open_socket(conversation, user, as_json=True)
    await socket.send_to(text_data=text)
    frame = json.loads(await socket.receive_from(timeout=5))
    assert await socket.receive_nothing(timeout=0.1)  # neither closed nor anything started
    await socket.disconnect()
    assert frame["type"] == "error", frame
    return frame["message"]


async def form_refusal(conversation, user, fields: dict[str, str]) -> str:
    """The page's notice for a form posted without JavaScript; the post is a 400."""
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.post(f"/c/{conversation.pk}/act/", fields)
    assert response.status_code == 400, response.status_code
    (notice,) = NOTICE.findall(response.content.decode())
    return html.unescape(notice)


async def api_refusal(conversation, user, endpoint: str, body: str, call_id: str = "call_1"):
    """The body of the REST API's 400 for `body` sent as JSON to `endpoint`."""
    client = AsyncClient()
    await client.aforce_login(user)
    path = API_PATHS[endpoint].format(pk=conversation.pk, call_id=call_id)
    response = await client.post(path, body, content_type="application/json")
    assert response.status_code == 400, (response.status_code, response.content[:200])
    return response.json()


def said(body: dict) -> str:
    """The one text of an API error body: {"detail": "…"} or {"<field>": ["…"]}."""
    ((_, text),) = body.items()
    return text if isinstance(text, str) else " ".join(text)
