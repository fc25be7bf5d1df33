from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware


class LoginRequiredForPagesMiddleware(LoginRequiredMiddleware):
    """Every page needs a login; the API answers 401/403 itself (token or session) instead of
    redirecting a program to a login form."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
