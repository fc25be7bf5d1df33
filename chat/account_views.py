from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.shortcuts import render


class LogoutView(auth_views.LogoutView):
    """Logging out changes state, so it takes a POST; a GET asks for confirmation."""

    http_method_names = ["get", "post", "options"]

    def get(self, request, *args, **kwargs):
        return render(request, "registration/logout.html")
