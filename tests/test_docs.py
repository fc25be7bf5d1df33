"""The README stays a guide one reads in minutes, and every relative link of the README,
SECURITY.md and docs/ leads somewhere: a file that exists and, for an anchor, a heading of
that file, as GitHub names it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.servers import ROOT

README_MOST_LINES = 250
PAGES = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
# Screenshots referenced before they are taken (docs/screenshots.py, with the next release's
# pictures): a link to one may wait, and the test below says when it is there to be checked.
AWAITED: set[Path] = set()

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def test_the_readme_is_at_most_250_lines():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MOST_LINES, f"README.md has {lines} lines: move detail to docs/"


def test_every_relative_link_leads_to_a_file_and_heading_that_exist():
    broken = []
    for page in PAGES:
        for target in links(page):
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if file in AWAITED:
                continue
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_every_page_of_docs_is_linked_from_the_readme():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(ROOT / "README.md")}
    pages = set((ROOT / "docs").glob("*.md"))
    assert pages - linked == set()


def test_awaited_screenshots_are_still_to_come():
    """Once one is taken, remove it from AWAITED: its links are then checked like any."""
    assert [path for path in AWAITED if path.exists()] == []
    assert all(
        any(path.name in target for target in links(ROOT / "README.md")) for path in AWAITED
    )


def test_the_link_checker_sees_a_broken_link_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n## Its part (two)\n\n[ok](#its-part-two) [gone](missing.md) "
        "[nowhere](#no-part) ![pic](pic.png) `[code](not-a-link.md)`\n"
        "```\n[in a block](not-a-link-either.md)\n```\n[web](https://example.com)\n"
    )
    assert links(page) == ["#its-part-two", "missing.md", "#no-part", "pic.png"]
    assert anchors(page) == {"a-page", "its-part-two"}


def links(page: Path) -> list[str]:
    """The page's relative link targets, outside code."""
    text = CODE.sub("", FENCE.sub("", page.read_text()))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def anchors(page: Path) -> set[str]:
    """The ids GitHub gives the page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#+ (.+)$", FENCE.sub("", page.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(f"{slug}-{count}" if count else slug)
    return found
