"""An answer's row has one writer: its verbs in chat.conversations.services (answer_open,
answer_extend, answer_pause, answer_resume, answer_end, answer_interrupt). No other module of
the application updates, creates or rides a Message row; erasure, the one documented rewrite,
empties every message of an account."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITERS = {"chat/conversations/services.py"}
# The one rewrite DESIGN allows: an erased account's texts are emptied.
REWRITE = {"chat/conversations/erasure.py"}
WRITES = {"update", "aupdate", "create", "acreate", "bulk_create", "bulk_update", "save", "asave"}
EXECUTORS = {"update_row", "update_rows", "insert_row", "insert_rows", "Ride"}


def _message_writes(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in WRITES:
            receiver = ast.unparse(func.value)
            if receiver.startswith(("Message.objects", "Message.all_objects")) or (
                func.attr in ("save", "asave") and "answer" in receiver.split(".")[-1]
            ):
                found.append(ast.unparse(node)[:80])
        elif isinstance(func, ast.Name) and func.id in EXECUTORS and node.args:
            first = ast.unparse(node.args[0])
            if first == "Message" or "answer" in first:
                found.append(ast.unparse(node)[:80])
    return found


def _modules() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for package in ("chat", "activity", "project")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_no_module_but_the_answer_verbs_writes_a_message_row():
    writes = {module: _message_writes((ROOT / module).read_text()) for module in _modules()}
    assert {module: found for module, found in writes.items() if found}.keys() == (
        WRITERS | REWRITE
    ), {m: f for m, f in writes.items() if f and m not in WRITERS | REWRITE}


def test_the_scan_finds_each_way_a_row_was_written_before_the_verbs():
    # The four ways the issue counted, as they were written in the runner, recovery,
    # approvals and admission.
    before = """
Ride(Message, self.answer.pk, {"content": text}, written)
update_row(Message, answer.pk, {"content": content, "state": state}, state=opened)
Message.objects.filter(pk=answer.pk).update(content=held.text)
insert_row(answer)
"""
    assert len(_message_writes(before)) == 4
