from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token


class LogoutView(auth_views.LogoutView):
    """Logging out changes state, so it takes a POST; a GET asks for confirmation."""

    http_method_names = ["get", "post", "options"]

    def get(self, request, *args, **kwargs):
        return render(request, "registration/logout.html")


@never_cache  # the page shows a secret: no browser or proxy may keep a copy
@require_http_methods(["GET", "POST"])
def api_token(request):
    """A user's API token: create (or replace) it, or revoke it."""
    if request.method == "POST":
        Token.objects.filter(user=request.user).delete()
        if request.POST.get("action") == "create":
            Token.objects.create(user=request.user)
            messages.success(
                request, _("A new API token was created; the old one no longer works.")
            )
        else:
            messages.success(request, _("Your API token was revoked."))
        return redirect("api_token")
    token = Token.objects.filter(user=request.user).first()
    return render(request, "registration/api_token.html", {"token": token})
