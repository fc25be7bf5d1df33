"""An approval card read from a page or a socket's frame as a person reads it: its parts in
order, and each argument's label, control, value and error (HTML parsed by the standard
library, text kept as written)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def find(self, tag: str = "", cls: str = "", **attrs: str) -> Node | None:
        return next(iter(self.find_all(tag, cls, **attrs)), None)

    def one(self, tag: str = "", cls: str = "", **attrs: str) -> Node:
        """The first such part, which the test expects to be there."""
        found = self.find(tag, cls, **attrs)
        assert found is not None, f"no <{tag or '*'}> {cls} {attrs} in {self.text[:200]!r}"
        return found

    def find_all(self, tag: str = "", cls: str = "", **attrs: str) -> list[Node]:
        return [
            node
            for node in self.walk()
            if (not tag or node.tag == tag)
            and (not cls or cls in node.classes)
            and all(node.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("root", {})
        self.open = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})  # a boolean attribute: ""
        self.open[-1].children.append(node)
        if tag not in VOID:
            self.open.append(node)

    def handle_endtag(self, tag):
        while len(self.open) > 1:
            if self.open.pop().tag == tag:
                break

    def handle_data(self, data):
        self.open[-1].children.append(data)


def parse(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


@dataclass(frozen=True)
class Argument:
    label: str
    control: str  # input, textarea or select
    value: str
    readonly: bool
    name: str | None
    error: str


def card_in(html: str, answer_id: int) -> Node:
    card = parse(html).find("section", id=f"approval-{answer_id}")
    assert card is not None, f"no card of answer {answer_id}"
    return card


def arguments(card: Node) -> list[Argument]:
    found = []
    for box in card.find_all("div", "argument"):
        label = box.find("label")
        assert label is not None
        control = next(n for n in box.walk() if n.tag in ("input", "textarea", "select"))
        assert label.attrs.get("for") == control.attrs.get("id")
        if control.tag == "textarea":
            value = control.text.removeprefix("\n")  # the parser drops the first line break
        elif control.tag == "select":
            chosen = control.find("option", selected="") or control.find("option")
            value = chosen.attrs.get("value", "") if chosen else ""
        else:
            value = control.attrs.get("value", "")
        error = box.find("p", "error")
        found.append(
            Argument(
                label=" ".join(label.text.split()),
                control=control.tag,
                value=value,
                readonly="readonly" in control.attrs,
                name=control.attrs.get("name"),
                error=" ".join(error.text.split()) if error else "",
            )
        )
    return found


def parts(card: Node) -> list[str]:
    """The card's parts in the order they come: title, arguments, change, deadline,
    receipt, decision."""
    marks = {
        "h3": "title",
        "fieldset": "arguments",
        "a": "change",
        "p": "deadline",
        "details": "receipt",
        "div": "decision",
    }
    shown = []
    for node in card.walk():
        part = marks.get(node.tag)
        if part == "change" and "change" not in node.classes:
            continue
        if part == "deadline" and "deadline" not in node.classes:
            continue
        if part == "decision" and "decide" not in node.classes:
            continue
        if part and part not in shown:
            shown.append(part)
    return shown
