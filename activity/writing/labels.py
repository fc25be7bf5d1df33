"""Auditors' labels on tool calls (issue 54): a label from GLASSBOX_SCORE_LABELS and a note,
appended to the call's feed as a `score` event, sealed like every other. An auditor's later
label of the same call counts instead; the record keeps both."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from activity.access import is_auditor
from activity.models import ActivityFeed
from activity.recording.events import SCORE_NOTE_LIMIT, Score
from activity.selectors import called_tools
from activity.telemetry import phoenix
from activity.writing import feeds


class LabelRefused(ValueError):
    """The label cannot be recorded; the text says why, `status` is the API's answer (as a
    rating's: a call the feed never made is not found) and `field` the field at fault."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def label_call(*, user: Any, feed_id: int, call_id: str, label: str, note: str = "") -> Score:
    """Records `user`'s label of one tool call of a finished feed; auditors only. The note
    comes through a form, which refuses what a database cannot store."""
    if not is_auditor(user):
        raise LabelRefused(_("Only auditors label tool calls."))
    if label not in settings.GLASSBOX_SCORE_LABELS:
        raise LabelRefused(_("That is not one of the labels."), field="label")
    if len(note) > SCORE_NOTE_LIMIT:
        raise LabelRefused(
            _("The note is at most %(limit)s characters long.") % {"limit": SCORE_NOTE_LIMIT},
            field="note",
        )
    state = ActivityFeed.objects.values_list("state", flat=True).get(pk=feed_id)
    if state in (ActivityFeed.State.RUNNING, ActivityFeed.State.WAITING):
        raise LabelRefused(_("An answer can be rated once it has finished."), status=409)
    tools = called_tools(feed_id)
    if call_id not in tools:
        raise LabelRefused(
            _("That answer made no tool call with this id."), status=404, field="call_id"
        )
    score = Score(
        call_id=call_id,
        value="",
        label=label,
        note=note,
        by=user.get_username(),
        by_id=user.pk,
        tool=tools[call_id],
    )
    written = feeds.append_late(feed_id, score)
    assert isinstance(written, Score)
    transaction.on_commit(lambda: phoenix.score_given(feed_id, written))
    return written
