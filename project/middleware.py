from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.utils import translation
from django.utils.deprecation import MiddlewareMixin

from activity.selectors import settings_of


class LoginRequiredForPagesMiddleware(LoginRequiredMiddleware):
    """Every page needs a login; the API answers 401/403 itself (token or session) instead of
    redirecting a program to a login form."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class UserLanguageMiddleware(MiddlewareMixin):
    """A logged-in user's saved language wins over the cookie and the browser, on every device.
    Runs after LocaleMiddleware (which read those) and AuthenticationMiddleware."""

    def process_request(self, request):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return
        _, language = settings_of(request)
        if language:
            translation.activate(language)
            request.LANGUAGE_CODE = translation.get_language()
