"""The user's saved language, on every request."""

from __future__ import annotations

from django.utils import translation
from django.utils.deprecation import MiddlewareMixin

from activity.selectors import settings_of


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
