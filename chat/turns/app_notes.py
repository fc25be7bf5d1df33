"""What an app (MCP Apps) says besides its calls, kept as `app_note` events of the answer's
feed, appended and sealed: a message it proposed for the conversation (`ui/message`: its
person reads it in the composer and sends it, or not) and the context it set for the model
(`ui/update-model-context`: kept for the audit; the model is not told it). The app wrote it:
bounded, counted, stored as text."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from activity.recording.events import APP_NOTE_KINDS, APP_NOTE_LIMIT, AppNote
from activity.writing import feeds
from chat.conversations import selectors

# Notes one app may add in all: a looping app stops here, as its calls do.
APP_NOTES = 50


class AppNoteRefused(Exception):
    """Why the app's note was not kept, in words the app is told."""


def app_note(user: Any, message_id: int, call_id: str, note: Any, text: Any) -> AppNote:
    """Keeps what the app of `call_id` (in the user's answer `message_id`) said; the event
    as recorded, or AppNoteRefused."""
    shown = selectors.app_shown(user, message_id, call_id)
    if note not in APP_NOTE_KINDS or not isinstance(text, str):
        raise AppNoteRefused(_("a note is a message or a context, with its text"))
    # As a database keeps it (no NUL, no lone surrogate), so the seal is that of the record.
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8").strip()
    if not text:
        raise AppNoteRefused(_("the note has no text"))
    if len(text) > APP_NOTE_LIMIT:
        raise AppNoteRefused(
            _("the note is over %(limit)d characters") % {"limit": APP_NOTE_LIMIT}
        )
    made = selectors.app_notes_made(shown.feed_id, call_id)
    if made >= APP_NOTES:
        raise AppNoteRefused(_("this app added %(count)d notes, all it may") % {"count": made})
    written = feeds.append_late(shown.feed_id, AppNote(call_id=call_id, note=note, text=text))
    assert isinstance(written, AppNote)
    return written
