"""Where a streaming Markdown answer can be cut. Every top-level block but the last is settled:
nothing the model writes later can change how it renders (a list or a fenced code block is
one block, however many blank lines it holds), so it is rendered once and never again. The
last block is the unfinished tail, shown as text until the next block begins or the answer
ends. Only the tail is parsed again as text arrives, so a frame costs the same at the start
of an answer and 20,000 characters in."""

from __future__ import annotations

from markdown_it import MarkdownIt

# The parser the final render uses (chat.conversations.markdown), so blocks are cut where
# it sees them.
_parser = MarkdownIt("js-default")


def settled_length(text: str) -> int:
    """How many leading characters of `text` are whole top-level blocks with a later block
    begun after them."""
    starts = [
        token.map[0]
        for token in _parser.parse(text)
        if token.level == 0 and token.nesting >= 0 and token.map
    ]
    if len(starts) < 2:
        return 0
    offset = 0
    for _ in range(starts[-1]):
        offset = text.index("\n", offset) + 1
    return offset


def split_settled(text: str) -> tuple[str, str]:
    """(settled blocks, unfinished tail) of a whole answer so far."""
    cut = settled_length(text)
    return text[:cut], text[cut:]
