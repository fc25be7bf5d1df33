"""Answers are written by an untrusted model: Markdown without raw HTML, then sanitized."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

# js-default: CommonMark plus tables and strikethrough, with raw HTML switched off.
_markdown = MarkdownIt("js-default")
_ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "ol": {"start"}}
# The schemes a link may have (relative links need none); the Markdown download keeps the same.
LINK_SCHEMES = frozenset({"http", "https", "mailto"})


def render_markdown(text: str) -> str:
    html = _markdown.render(text)
    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=set(LINK_SCHEMES),
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
