"""The README stays a guide one reads in minutes, and every relative link of the README,
SECURITY.md and docs/ leads somewhere: a file that exists and, for an anchor, a heading of
that file, as GitHub names it. The code they name in backticks exists too: a repo path
(`chat/turns/wires.py`) and a module or what it defines (`chat.turns.follow_turn`)."""

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
NAMED = re.compile(r"`([^`\n]+)`")
# A repo path: folders and a file (or a folder, with a slash at its end), no placeholders.
REPO_PATH = re.compile(r"[\w.-]+(/[\w.-]+)*/?")
TOP_FOLDERS = {path.name for path in ROOT.iterdir() if path.is_dir()}
DOTTED = re.compile(r"(activity|chat|project)(\.\w+)+")


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


def test_every_path_and_module_named_in_backticks_exists():
    stale = [
        f"{page.relative_to(ROOT)}: `{name}`"
        for page in PAGES
        for name in named_code(page)
        if not names_code_that_exists(name)
    ]
    assert stale == []


def test_the_path_checker_sees_a_moved_file_and_a_moved_name(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "`chat/turns/wires.py` `chat/read_only_admin.py` `tools/call` `locale/<l>/x.po`\n"
        "`chat.turns.follow_turn` `chat.turns.no_such_verb` `chat.Revocation` "
        "`chat.read_only_admin.ReadOnlyAdmin` `https://chat.example.com`\n"
    )
    assert [name for name in named_code(page) if not names_code_that_exists(name)] == [
        "chat/read_only_admin.py",
        "chat.turns.no_such_verb",
        "chat.read_only_admin.ReadOnlyAdmin",
    ]


def named_code(page: Path) -> list[str]:
    """What the page names in backticks that looks like a repo path (its first folder is one
    of the repo's) or a dotted name in one of the apps or the project."""
    return [
        name
        for name in NAMED.findall(FENCE.sub("", page.read_text()))
        if (REPO_PATH.fullmatch(name) and "/" in name and name.split("/")[0] in TOP_FOLDERS)
        or DOTTED.fullmatch(name)
    ]


def names_code_that_exists(name: str) -> bool:
    """A path exists in the repo; a dotted name is a module, or a name its module defines or
    imports (`chat.turns.begin`), or an app's model or permission (`chat.Revocation`)."""
    if "/" in name:
        return (ROOT / name).exists()
    parts = name.split(".")
    found = 1
    while found < len(parts) and module_file(parts[: found + 1]):
        found += 1
    rest = parts[found:]
    if not rest:
        return True
    if len(rest) > 1:
        return False
    if found == 1:
        return True  # an app's label with a model's or a permission's name
    source = module_file(parts[:found])
    assert source is not None
    return re.search(rf"\b{re.escape(rest[0])}\b", source.read_text()) is not None


def module_file(parts: list[str]) -> Path | None:
    path = ROOT.joinpath(*parts)
    for file in (path.with_suffix(".py"), path / "__init__.py"):
        if file.exists():
            return file
    return None


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
