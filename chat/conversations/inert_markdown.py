"""Markdown a person downloads, as inert as the page that showed it.

The page renders an answer with markdown-it (no raw HTML) and nh3 (no images, links only to
http, https and mailto). A downloaded .md file is opened by other viewers, which render raw
HTML, fetch images and follow any link, so the text is made inert before it is written:
raw HTML is escaped, images become links, and a link whose target the page would drop
(`javascript:`, `data:`, `vbscript:`, in any case and behind any entity, escape or
whitespace) is no link at all. Code is left as written.

That is done on the text, line by line; a parse with markdown-it's own parser (link
validation off) then checks what a viewer would make of it, and a text it still finds a bad
link in is written as plain text instead."""

from __future__ import annotations

import re
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.helpers import parseLinkDestination

from chat.conversations.markdown import LINK_SCHEMES

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
# A code span opens and closes with backtick runs of the same length, each a whole run; an
# escaped backtick opens none (CommonMark 6.1).
CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`).+?(?<!`)\1(?!`)")
# Where Markdown starts HTML, an autolink or an image, or reads a link's target: "](" for an
# inline link, "]:" for a reference definition.
SYNTAX = re.compile(r"<|!\[|\](?=[(:])")
AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}):[^<>\x00-\x20]*>")
EMAIL_AUTOLINK = re.compile(
    r"<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*>"
)
# Browsers drop tabs and line breaks anywhere in a URL and spaces and controls around it;
# dropping every one of them reads a scheme at least as eagerly as any browser does.
SKIPPED_BY_BROWSERS = re.compile(r"[\x00-\x20\x7f]")
SCHEME = re.compile(r"([^/?#:]*):")
PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def allowed_target(url: str) -> bool:
    """Whether the page keeps a link to this target: a relative one, or http, https or
    mailto. Read after entities, backslash escapes and percent-encoding are undone, so
    `java&#x09;script:`, `JaVaScRiPt:` and `javascript&colon;` are what they are."""
    seen = SKIPPED_BY_BROWSERS.sub("", unquote(unescapeAll(url))).lower()
    scheme = SCHEME.match(seen)
    return scheme is None or scheme.group(1) in LINK_SCHEMES


def inert(markdown: str) -> str:
    """The text with raw HTML escaped, images made links and links to targets the page
    drops broken; fenced code and code spans as written. A fence left open is closed, as
    the page closes it at the answer's end."""
    lines, fence = [], ""
    for line in markdown.split("\n"):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            lines.append(line)
        elif opening:
            fence = opening.group(1)
            lines.append(line)
        else:
            lines.append(_outside_code_spans(line))
    if fence:
        lines.append(fence)
    return "\n".join(lines)


def literal(text: str) -> str:
    """The text as plain text: every ASCII punctuation mark escaped, so no character of it
    is Markdown (nor HTML, nor a link) in any context."""
    return "\n".join(PUNCTUATION.sub(r"\\\1", line.strip()) for line in text.split("\n"))


_checker = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# Every target is kept as a link, so that the check sees what a lenient viewer would.
_checker.validateLink = lambda url: True  # type: ignore[method-assign]


def bad_targets(markdown: str) -> list[str]:
    """The link and image targets in this Markdown, defined or used, that the page drops."""
    env: dict = {}
    tokens = _checker.parse(markdown, env)
    targets = [str(ref["href"]) for ref in env.get("references", {}).values()]
    while tokens:
        token = tokens.pop()
        tokens.extend(token.children or [])
        targets += [str(token.attrs[name]) for name in ("href", "src") if name in token.attrs]
    return [target for target in targets if not allowed_target(target)]


def _outside_code_spans(line: str) -> str:
    parts, last = [], 0
    for span in CODE_SPAN.finditer(line):
        parts += [_defused(line[last : span.start()]), span.group(0)]
        last = span.end()
    return "".join([*parts, _defused(line[last:])])


def _defused(text: str) -> str:
    return SYNTAX.sub(lambda found: _defuse(text, found.group(), found.start()), text)


def _defuse(text: str, syntax: str, at: int) -> str:
    if _escaped(text, at) and syntax != "![":
        return syntax  # already text: one more backslash would make it syntax again
    if syntax == "![":
        return "["
    if syntax == "<":
        autolink = AUTOLINK.match(text, at)
        if autolink and autolink.group(1).lower() in LINK_SCHEMES:
            return "<"
        return "<" if EMAIL_AUTOLINK.match(text, at) else "&lt;"
    # A "]" that a link's target follows: escaped, it closes no link text or label.
    return "]" if _target_allowed(text, at + 2) else "\\]"


def _escaped(text: str, at: int) -> bool:
    """Whether an odd run of backslashes stands before this character."""
    start = at
    while start and text[start - 1] == "\\":
        start -= 1
    return (at - start) % 2 == 1


def _target_allowed(text: str, at: int) -> bool:
    while at < len(text) and text[at] in " \t":
        at += 1
    if at == len(text):
        return False  # the target is on the next line: not kept as a link
    target = parseLinkDestination(text, at, len(text))
    return not target.ok or allowed_target(target.str)
