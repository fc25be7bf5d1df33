"""What a test reads out of a page or a frame: a pattern's group, or a clear failure that says
what was looked for and where."""

from __future__ import annotations

import re

CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def found(pattern: str | re.Pattern[str], text: str, group: int | str = 1) -> str:
    match = re.search(pattern, text)
    assert match is not None, f"{pattern!r} is not in {text[:2000]!r}"
    return match.group(group)


def csrf_token(page: str) -> str:
    """The CSRF token of the page's form, as a browser would post it."""
    return found(CSRF_FIELD, page)
