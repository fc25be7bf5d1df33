"""Which language a person sees: their saved choice, else the language cookie (the switcher
sets it, also before login), else the browser's Accept-Language. Pages and sockets both ask
here, so a live fragment speaks the language of the page it lands in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import parse_qs

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation


def supported(code: str) -> str:
    """The configured language for `code`, or '' when Glassbox does not speak it."""
    if not code:
        return ""
    try:
        return translation.get_supported_language_variant(code)
    except LookupError:
        return ""


def language_from_browser(
    cookies: Mapping[str, str], headers: Iterable[tuple[bytes, bytes]]
) -> str:
    """Django's own choice for a request with these cookies and headers (a socket's scope)."""
    request = HttpRequest()
    request.COOKIES = dict(cookies)
    for name, value in headers:
        if name.lower() == b"accept-language":
            request.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin-1")
    return translation.get_language_from_request(request)


def page_language(query_string: bytes) -> str:
    """The language a page asks its socket to speak (`?lang=` on the socket's URL), if
    Glassbox speaks it; else ''."""
    values = parse_qs(query_string.decode("latin-1")).get("lang", [])
    return supported(values[0]) if values else ""


def language_name(code: str) -> str:
    """The language's English name, as the model is told it: 'Italian'."""
    return translation.get_language_info(supported(code) or settings.LANGUAGE_CODE)["name"]
