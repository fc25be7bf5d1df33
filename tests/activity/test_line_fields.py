"""A feed line as fields (RENDER rich): its own text split, never rewritten, and inert."""

from __future__ import annotations

import pytest

from activity.presenting.line_fields import fields_of
from activity.presenting.presentation import line_for
from activity.recording.events import Status


def fields(message: str, detail: str = "", **status):
    line = line_for(Status(icon="🔍", message=message, state="done", **status), detail=detail)
    return line, fields_of(line)


@pytest.mark.parametrize(
    ("message", "action", "subject"),
    [
        (
            "Searched the knowledge base for “salary”",
            "Searched the knowledge base for",
            "“salary”",
        ),
        ("Bash: run tests", "Bash", "run tests"),
        ("Calculated 1 + 2 = 3", "Calculated 1 + 2 = 3", ""),
        ("“quoted” at the start", "“quoted” at the start", ""),
    ],
)
def test_a_line_splits_into_its_action_and_its_subject(message, action, subject):
    _, parts = fields(message)
    assert (parts.action, parts.subject) == (action, subject)


@pytest.mark.parametrize(
    "message",
    ["Searched the knowledge base for “salary”", "Bash: run tests", "Calculated 1 + 2 = 3"],
)
def test_the_fields_joined_read_as_the_plain_line(message):
    line, parts = fields(message, detail="query: salary")
    joined = parts.action + (parts.separator + parts.subject if parts.subject else "")
    assert f"{joined}, {parts.detail}" == line.message


def test_markup_the_model_wrote_stays_text_in_every_field():
    _, parts = fields("<b>Ran</b>: <script>alert(1)</script>", detail="q: <img src=x>")
    assert (parts.action, parts.subject, parts.detail) == (
        "<b>Ran</b>", "<script>alert(1)</script>", "q: <img src=x>"
    )  # fmt: skip
    assert parts.as_json()["outcome"] == "done"
