"""The loop's own lines in the feed: ✍️ writing, ✅ done, and 🔄 answering without a tool,
which runs until what it announced begins."""

from __future__ import annotations

from dataclasses import replace

from django.utils.translation import gettext as _

from activity.recording.events import FALLBACK, Status


# Built when a turn needs them, so they speak the turn's language.
def writing() -> Status:
    return Status(icon="✍️", message=_("Writing the answer…"), state="in_progress")


def finished() -> Status:
    return Status(icon="✅", message=_("Done"), state="done")


def fallback(call_id: str, message: str) -> Status:
    """Seed 002: 🔄 runs until the answer (or the model's next step) begins."""
    return Status(
        icon="🔄",
        message=message,
        state="in_progress",
        tool=FALLBACK,
        call_id=f"{call_id}-fallback",
    )


def settle(running: list[Status]) -> list[Status]:
    """The 🔄 lines still running, done: what they announced has begun."""
    done = [replace(line, state="done") for line in running]
    running.clear()
    return done
