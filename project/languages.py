"""Which language a person sees: their saved choice, else the language cookie (the switcher
sets it, also before login), else the browser's Accept-Language. Pages and sockets both ask
here, so a live fragment speaks the language of the page it lands in."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
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


# Words a question of a few words plainly in that language holds, and the other language
# does not share ("come", "a", "no" are both English and Italian, so neither list has them).
ENGLISH_WORDS = frozenset(
    "the and is are was were be been do does did how what when where why who which whom "
    "you he she we they my your his her our their me us them it its this that these those "
    "of on at to for from with about into by can could should would will shall may might "
    "must not hello hi please thanks thank there here have has had an or if than then".split()
)
# Words of languages Glassbox has no catalogue for that the lists above would mistake.
OTHER_WORDS = frozenset(
    "el los las es cómo qué para pero y yo tengo puedo est et je vous nous les des une pour "
    "avec und der die das ist ich wie nicht mein meine não você como eu".split()
)
ITALIAN_WORDS = frozenset(
    "il lo la gli le di del della dello dei degli delle che chi cosa perché quando dove "
    "quale quali quanto quanta quanti sono sei siamo siete ho hai ha abbiamo avete hanno "
    "mio mia miei mie tuo tua suo sua nostro vostro un uno una per con su tra fra nel nella "
    "nei alla allo al ai agli dal dalla posso puoi può devo vorrei ciao grazie non ed anche "
    "mi ti ci vi si è sto stai cerco cerca fammi dimmi voglio".split()
)
KANA_OR_HANGUL = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# Common characters written one way in Simplified and another in Traditional Chinese.
SIMPLIFIED_ONLY = frozenset(
    "们这说么时会对还问题资谈进该为个来发经过样动业产长开关门见间电话请让认识书边应实现职转试备"
)
TRADITIONAL_ONLY = frozenset(
    "們這說麼時會對還問題資談進該為個來發經過樣動業產長開關門見間電話請讓認識書邊應實現職轉試備"
)


def written_language(text: str) -> str:
    """The configured language `text` is plainly written in, or '' when it is none of them
    or too short to tell ("salary negotiation" names no language; "Come posso negoziare il
    mio stipendio?" is Italian). A question's language, as Glassbox's own lines follow it."""
    if HAN.search(text):
        if KANA_OR_HANGUL.search(text):
            return ""  # Japanese or Korean
        simplified = sum(ch in SIMPLIFIED_ONLY for ch in text)
        traditional = sum(ch in TRADITIONAL_ONLY for ch in text)
        return "" if simplified > traditional else supported("zh-hant")
    words = re.findall(r"[^\W\d_]+", text.casefold())
    english = sum(word in ENGLISH_WORDS for word in words)
    italian = sum(word in ITALIAN_WORDS for word in words)
    other = sum(word in OTHER_WORDS for word in words)
    if english > max(italian, other):
        return supported("en")
    if italian > max(english, other):
        return supported("it")
    return ""
