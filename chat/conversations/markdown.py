"""Answers are written by an untrusted model: Markdown without raw HTML, then sanitized."""

from __future__ import annotations

import re

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


# Inline marks a cut answer may have left open, longest first ("**" before "*").
_INLINE_MARKS = ("**", "__", "~~", "`", "*", "_")
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_INTRAWORD = re.compile(r"(?<=[^\W_])_+(?=[^\W_])")


def close_cut(text: str) -> str:
    """An answer cut mid-sentence (stopped, failed, interrupted), with the Markdown it left
    open closed, so "**important" reads as bold, not as two literal asterisks: an unclosed
    code fence is closed, then each inline mark left open in the last paragraph."""
    fences = _FENCE.findall(text)
    if len(fences) % 2:
        return f"{text}\n{fences[-1]}"
    last = text.rsplit("\n\n", 1)[-1]
    line_start = re.compile(r"^\s*[*_-]\s", re.MULTILINE)  # a list bullet opens nothing
    plain = line_start.sub("", _CODE_SPAN.sub("", last))
    plain = _INTRAWORD.sub("", plain)  # snake_case opens no emphasis
    closing = ""
    for mark in _INLINE_MARKS:
        if plain.count(mark) % 2:
            closing = mark + closing if mark != "`" else closing + mark
        plain = plain.replace(mark, "")
    return text.rstrip() + closing if closing else text


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
