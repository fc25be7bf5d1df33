"""The user's saved language, on every request."""

from __future__ import annotations

from django.utils import translation
from django.utils.deprecation import MiddlewareMixin

from activity.selectors import reader_settings


class UserLanguageMiddleware(MiddlewareMixin):
    """A logged-in user's saved language wins over the cookie and the browser, on every device.
    Runs after LocaleMiddleware (which read those) and AuthenticationMiddleware."""

    def process_request(self, request):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return
        language = reader_settings(request).language
        if language:
            translation.activate(language)
            request.LANGUAGE_CODE = translation.get_language()
