"""The account's connections to MCP servers that each user authorizes: the list with the
scopes granted and Disconnect; the link a turn's 🔑 line opens; the callback the
authorization server sends the user back to, which hands the waiting turn its answer."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from chat.servers.consents import consent_answer, consent_waiting
from chat.servers.grants import connected, disconnect
from chat.servers.models import McpConsent
from chat.servers.oauth_client import deployment_client

# What a callback's parameters may hold, at most (an authorization code is far shorter).
PARAM_LIMIT = 2000


@never_cache
@require_http_methods(["GET", "POST"])
def connections(request):
    if request.method == "POST":
        server = request.POST.get("server", "")
        if disconnect(user_id=request.user.pk, server=server):
            messages.success(
                request,
                _("Disconnected from %(server)s: its tools no longer act for you.")
                % {"server": server},
            )
        else:
            messages.error(request, _("You are not connected to that server."))
        return redirect("mcp_connections")
    return render(request, "chat/connections.html", {"grants": connected(request.user.pk)})


@never_cache
@require_GET
def connection_authorize(request, server: str):
    """Where a turn's "Connect to <server>" link goes: on to the authorization the turn
    waits for, if this user has one."""
    consent = consent_waiting(user_id=request.user.pk, server=server)
    if consent is None or not consent.authorization_url.startswith(("https://", "http://")):
        return render(
            request,
            "chat/connection_answered.html",
            {"server": server, "missing": True},
            status=404,
        )
    return HttpResponseRedirect(consent.authorization_url)


@never_cache
@require_GET
def connection_callback(request):
    values = {
        key: request.GET.get(key, "")[:PARAM_LIMIT] for key in ("code", "state", "iss", "error")
    }
    if not values["state"]:
        return render(request, "chat/connection_answered.html", {"unknown": True}, status=400)
    try:
        consent = consent_answer(user_id=request.user.pk, **values)
    except McpConsent.DoesNotExist:
        return render(request, "chat/connection_answered.html", {"unknown": True}, status=400)
    return render(
        request,
        "chat/connection_answered.html",
        {"server": consent.server, "granted": not consent.error},
    )


@login_not_required
@require_GET
def client_metadata(request):
    """This site's OAuth client metadata document (a client ID metadata document): where
    GLASSBOX_OAUTH_CLIENT_METADATA_URL points, authorization servers that accept such client
    IDs read who Glassbox is and where it may send users back, and need no registration."""
    client = deployment_client()
    if not client.metadata_url:
        raise Http404
    return JsonResponse(client.document())
