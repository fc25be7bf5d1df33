"""Who audits: one definition for the admin's audit pages, the feeds API and the exports.

An auditor reads every user's feeds, tool calls and reseals. Django's admin already asks an
account to be active and staff before it opens; the API and the exports ask the same three
things, so taking away any one of them ends audit access everywhere at once."""

from __future__ import annotations

from typing import Any

AUDIT_PERMISSION = "activity.view_activityfeed"


def is_auditor(user: Any) -> bool:
    """Active, staff, and Django's view permission on feeds (superusers have every
    permission, but still need to be active staff)."""
    return bool(
        user is not None and user.is_active and user.is_staff and user.has_perm(AUDIT_PERMISSION)
    )
