"""The session id a Streamable HTTP server gives (`Mcp-Session-Id`), as the audit and the
traces keep it (`mcp.session.id`). The server chose it, so it is untrusted text: kept only
when it is what the spec allows (visible ASCII) and short enough for a column."""

from __future__ import annotations

import re

# The spec: "only visible ASCII characters (ranging from 0x21 to 0x7E)"; servers use UUIDs,
# hex digests or JWTs, all far below the bound.
SESSION_ID = re.compile(r"[\x21-\x7e]{1,256}")


def kept_session_id(given: str | None) -> str:
    """The id to keep, or "" for none (absent, or not a session id the spec allows)."""
    return given if given and SESSION_ID.fullmatch(given) else ""
