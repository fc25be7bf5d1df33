from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.urls import include, path, re_path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found
from django.views.generic import RedirectView

from chat.pages import account as account_views
from chat.pages import app_frames
from chat.pages import connections as connection_views


def schema_view(name: str, **initkwargs: Any) -> Callable[..., HttpResponseBase]:
    """drf-spectacular's view `name`, imported on its first request: its module loads the
    schema generator, which no other request needs (project.openapi.documented)."""
    view: Callable[..., HttpResponseBase] | None = None

    @csrf_exempt  # as DRF's views are: they check a session's token themselves
    def first_imported(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        nonlocal view
        if view is None:
            from drf_spectacular import views

            view = getattr(views, name).as_view(**initkwargs)
        return view(request, *args, **kwargs)

    return first_imported


# Swagger UI styles itself inline; its script is served as a file (the split view).
api_docs = csp_override(
    {
        "default-src": [CSP.SELF],
        "script-src": [CSP.SELF],
        "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
        "img-src": [CSP.SELF, "data:"],
    }
)(schema_view("SpectacularSwaggerSplitView", url_name="api-schema"))

urlpatterns = [
    path("accounts/logout/", account_views.LogoutView.as_view(), name="logout"),
    path("accounts/token/", account_views.api_token, name="api_token"),
    path("accounts/connections/", connection_views.connections, name="mcp_connections"),
    path(
        "accounts/connections/callback/",
        connection_views.connection_callback,
        name="mcp_connection_callback",
    ),
    path(
        "oauth/client-metadata.json",
        connection_views.client_metadata,
        name="oauth_client_metadata",
    ),
    path(
        "accounts/connections/<str:server>/authorize/",
        connection_views.connection_authorize,
        name="mcp_connection_authorize",
    ),
    # Named outside chat's namespace, as the connect link is: the feed's lines (activity's
    # templates) frame a call's app by these names, and know nothing of chat.
    path("apps/<int:message_id>/<str:call_id>/", app_frames.app_frame, name="mcp_app_frame"),
    path(
        "apps/<int:message_id>/<str:call_id>/call/",
        app_frames.app_call,
        name="mcp_app_call",
    ),
    path(
        "apps/<int:message_id>/<str:call_id>/call/<str:waiting>/",
        app_frames.app_call_outcome,
        name="mcp_app_outcome",
    ),
    path(
        "apps/<int:message_id>/<str:call_id>/note/",
        app_frames.app_note,
        name="mcp_app_note",
    ),
    path(
        "apps/<int:message_id>/<str:call_id>/card/",
        app_frames.app_call_card,
        name="mcp_app_card",
    ),
    path(
        "apps/<int:message_id>/<str:call_id>/context/",
        app_frames.app_context,
        name="mcp_app_context",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    # The MCP servers' admin pages were chat's before the servers app had them: bookmarks
    # of their old addresses still arrive.
    re_path(
        r"^admin/chat/(?P<page>mcp(?:server|serverchange|grant|grantrecord)/.*)$",
        RedirectView.as_view(url="/admin/servers/%(page)s", permanent=True, query_string=True),
    ),
    path("admin/", admin.site.urls),
    path("api/", include("chat.api.urls")),
    path("api/", include("activity.api.urls")),
    path("api/schema/", schema_view("SpectacularAPIView"), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("", include("activity.urls")),
    path("", include("chat.urls")),
]


def not_found(request, exception):
    """Programs get JSON, also for a path that matches no route (a malformed id)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


handler404 = not_found
