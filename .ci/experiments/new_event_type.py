"""The new-event-type experiment (issue 52): declare one more recorded event in a copy of the
tree, run mypy there, and pass only if mypy names every surface that must handle it.

    .venv/bin/python .ci/experiments/new_event_type.py

Every surface matches on the event classes and ends with `assert_never`, so an event class
added to the union is an error in each of them until it is shown, exported and mapped. The
copy keeps mypy's cache, so a run after the first takes seconds."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENTS = "activity/recording/events.py"
# Where an event is shown, exported or mapped (DESIGN: "Events are typed end to end").
SURFACES = {
    "live page": "activity/presenting/live.py",
    "program frames (JSON socket, SSE)": "activity/presenting/program_frames.py",
    "history": "activity/presenting/presentation.py",
    "AG-UI": "chat/api/standards/agui.py",
    "UI message stream": "chat/api/standards/ui_stream.py",
    "audit (evidence)": "activity/auditing/audit.py",
    "admin": "activity/admin.py",
    "telemetry": "activity/telemetry/spans.py",
}
NEW_EVENT = '''

@dataclass(frozen=True, slots=True)
class Note:
    """The experiment's new event type."""

    call_id: str = field(metadata=declare(column="call_id"))
    seq: int | None = field(default=None, metadata=declare(column="seq"))
    type: Literal["note"] = field(default="note", metadata=declare(column="kind"))
'''


def declare_new_event(tree: Path) -> None:
    path = tree / EVENTS
    source = path.read_text()
    union = (
        "RecordedEvent = (\n"
        "    Status | ToolCall | ToolResult | Decision | Plan | ToolLog | Score | AppView"
        " | AppNote\n"
        ")\n"
    )
    if union not in source:
        raise SystemExit(f"{EVENTS} no longer declares {union.strip()!r}: update the experiment")
    source = source.replace(
        union, NEW_EVENT.lstrip("\n") + "\n\n" + union.replace("AppNote\n", "AppNote | Note\n")
    )
    source = source.replace(
        '    "tool_log": ToolLog,\n', '    "tool_log": ToolLog,\n    "note": Note,\n'
    )
    path.write_text(source)


def copy_tree(tree: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / name.decode()
        if source.is_file():
            target = tree / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", tree / ".mypy_cache", symlinks=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="glassbox-new-event-") as temp:
        tree = Path(temp)
        copy_tree(tree)
        declare_new_event(tree)
        mypy = subprocess.run(
            [sys.executable, "-m", "mypy"], cwd=tree, capture_output=True, text=True
        )
    errors = re.findall(r"^([\w/]+\.py):\d+: error: (.*)$", mypy.stdout, re.MULTILINE)
    flagged = {path for path, _ in errors}
    missing = []
    for name, path in SURFACES.items():
        found = path in flagged
        print(f"{'error' if found else 'SILENT':>6}  {name:<36} {path}")
        if not found:
            missing.append(name)
    others = sorted(flagged - set(SURFACES.values()))
    if others:
        print("also flagged:", ", ".join(others))
    if mypy.returncode == 0 or missing:
        print(f"FAILED: mypy said nothing in {', '.join(missing) or 'any surface'}")
        print(mypy.stdout[-4000:], mypy.stderr[-2000:])
        return 1
    print(f"passed: a new event type fails the type check in all {len(SURFACES)} surfaces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
