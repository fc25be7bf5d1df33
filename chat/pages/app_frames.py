"""A tool's own interface (MCP Apps) in its frame. Its HTML is the MCP server's: hostile. It
is served only here, on Glassbox's origin but sandboxed by its own header (`sandbox
allow-scripts`, never `allow-same-origin`), so its document has an opaque origin: it reads no
cookie, no page, no API of Glassbox, and its policy lets it reach only the https origins its
resource declared (chat.agent.mcp.apps checked them). The page's bridge (static apps.js) is
the one thing it talks to, and reads the call's input and result from `app_context`."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from activity.recording.events import AppView
from chat.asks.cards import waiting_card
from chat.conversations import selectors
from chat.socket.render import approval_card
from chat.turns import app_calls, app_notes

# JSON-RPC's codes for what the bridge relays back: refused by the host, or malformed.
REFUSED = -32000
INVALID = -32600
CALL_BODY_LIMIT = 64 * 1024

# The spec's directives for the domains a resource declares, and where each key goes.
SOURCES = {
    "script-src": "resourceDomains",
    "style-src": "resourceDomains",
    "img-src": "resourceDomains",
    "font-src": "resourceDomains",
    "media-src": "resourceDomains",
    "connect-src": "connectDomains",
    "frame-src": "frameDomains",
    "base-uri": "baseUriDomains",
}
# What an app needs of itself: its own inline script and style, images inlined as data.
INLINE = {
    "script-src": "'unsafe-inline'",
    "style-src": "'unsafe-inline'",
    "img-src": "data:",
    "font-src": "data:",
    "media-src": "data:",
}


def frame_policy(app: AppView) -> str:
    """The frame's Content-Security-Policy: sandboxed without its origin, nothing by default,
    and for each directive only what the resource declared (never Glassbox's own origin)."""
    parts = ["sandbox allow-scripts", "default-src 'none'"]
    for directive, key in SOURCES.items():
        sources = [INLINE[directive]] if directive in INLINE else []
        sources += app.csp.get(key, ())
        parts.append(f"{directive} {' '.join(sources) or "'none'"}")
    parts += ["form-action 'none'", "frame-ancestors 'self'"]
    return "; ".join(parts)


@require_GET
@xframe_options_sameorigin
def app_frame(request: HttpRequest, message_id: int, call_id: str) -> HttpResponse:
    app = selectors.app_shown(request.user, message_id, call_id).app
    response = HttpResponse(app.html, content_type="text/html; charset=utf-8")
    # Set here, so the site's own policy (SECURE_CSP) is not added to it.
    response["Content-Security-Policy"] = frame_policy(app)
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, no-store"
    return response


@require_POST
async def app_call(request: HttpRequest, message_id: int, call_id: str) -> JsonResponse:
    """The bridge relays an app's `tools/call` here (chat.turns.app_calls decides); the
    answer is the JSON-RPC result or error the bridge hands back to the frame."""
    user = await request.auser()
    if not user.is_authenticated:
        return JsonResponse({"error": {"code": REFUSED, "message": "not signed in"}}, status=403)
    if len(request.body) > CALL_BODY_LIMIT:
        return JsonResponse({"error": {"code": INVALID, "message": "too large"}}, status=413)
    try:
        asked = json.loads(request.body)
    except ValueError:
        asked = None
    if not isinstance(asked, dict):
        return JsonResponse({"error": {"code": INVALID, "message": "not JSON"}}, status=400)
    try:
        result = await app_calls.app_call(
            user, message_id, call_id, asked.get("name"), asked.get("arguments", {})
        )
    except app_calls.AppCallRefused as refused:
        return JsonResponse({"error": {"code": REFUSED, "message": str(refused)}})
    except app_calls.AppCallWaits as waits:
        # Its owner decides on the card; the bridge asks `outcome` until there is one.
        url = reverse("mcp_app_outcome", args=[message_id, call_id, waits.call_id])
        seconds = settings.GLASSBOX_APPROVAL_TIMEOUT
        return JsonResponse(
            {"waiting": waits.call_id, "outcome": url, "seconds": seconds}, status=202
        )
    return JsonResponse({"result": result})


@require_POST
def app_note(request: HttpRequest, message_id: int, call_id: str) -> JsonResponse:
    """The bridge relays here what an app said besides its calls (`ui/message`,
    `ui/update-model-context`); chat.turns.app_notes keeps it in the answer's feed."""
    if len(request.body) > CALL_BODY_LIMIT:
        return JsonResponse({"error": {"code": INVALID, "message": "too large"}}, status=413)
    try:
        said = json.loads(request.body)
    except ValueError:
        said = None
    if not isinstance(said, dict):
        return JsonResponse({"error": {"code": INVALID, "message": "not JSON"}}, status=400)
    try:
        kept = app_notes.app_note(
            request.user, message_id, call_id, said.get("note"), said.get("text")
        )
    except app_notes.AppNoteRefused as refused:
        return JsonResponse({"error": {"code": REFUSED, "message": str(refused)}}, status=400)
    return JsonResponse({"seq": kept.seq}, status=201)


@require_GET
def app_call_outcome(
    request: HttpRequest, message_id: int, call_id: str, waiting: str
) -> JsonResponse:
    """How a call of the app that waited for approval ended: the JSON-RPC result or error
    the bridge hands back to the frame, or `{"waiting": true}` while it has not."""
    ended = app_calls.outcome(request.user, message_id, call_id, waiting)
    if ended is None:
        response = JsonResponse({"waiting": True})
    elif "error" in ended:
        response = JsonResponse({"error": {"code": REFUSED, "message": ended["error"]}})
    else:
        response = JsonResponse({"result": ended["result"]})
    response["Cache-Control"] = "private, no-store"
    return response


@require_GET
def app_call_card(request: HttpRequest, message_id: int, call_id: str) -> HttpResponse:
    """The answer's approval slot as it stands (the card of its app's waiting call, or
    empty): the bridge draws it when a call starts waiting and when it ends."""
    shown = selectors.app_shown(request.user, message_id, call_id)
    card = waiting_card(shown.answer_id)
    return HttpResponse(approval_card(shown.answer_id, card))


@require_GET
def app_context(request: HttpRequest, message_id: int, call_id: str) -> JsonResponse:
    """The call's input and result as the app receives them (`ui/notifications/tool-input`,
    `tool-result`), and the resource's address and hash."""
    shown = selectors.app_shown(request.user, message_id, call_id)
    result: dict[str, Any] | None = None
    if shown.result is not None:
        result = {
            "content": [{"type": "text", "text": shown.result.content}],
            "isError": not shown.result.ok,
        }
        if shown.result.structured is not None:
            result["structuredContent"] = shown.result.structured
    response = JsonResponse(
        {
            "uri": shown.app.uri,
            "sha256": shown.app.sha256,
            "tool": shown.app.tool,
            "arguments": shown.arguments,
            "result": result,
        }
    )
    response["Cache-Control"] = "private, no-store"
    return response
