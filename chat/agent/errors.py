"""Provider failures in words a person understands."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

from django.utils.translation import gettext as _

if TYPE_CHECKING:
    import openai

# The provider's own words are kept to one line of this length; they are untrusted text,
# escaped wherever a feed or an export shows them.
SAID_LIMIT = 200
MARKUP = re.compile(r"^\s*<")


class ProviderError(Exception):
    """The provider's reply broke the protocol; the text says how, for people."""


def provider_said(exc: openai.APIError) -> str:
    """The message the provider wrote in its error (a JSON body's `message`, or a plain-text
    body), on one line; nothing for an HTML error page."""
    body = exc.body
    said = body.get("message") if isinstance(body, dict) else body
    if not isinstance(said, str) or MARKUP.match(said):
        return ""
    said = " ".join(said.split())
    return said if len(said) <= SAID_LIMIT else said[: SAID_LIMIT - 1] + "…"


def _with(reason: str, said: str) -> str:
    return _("%(reason)s: “%(said)s”") % {"reason": reason, "said": said} if said else reason


def describe_failure(exc: BaseException) -> str:
    if isinstance(exc, ProviderError):
        return str(exc)
    if "openai" not in sys.modules:  # no SDK loaded, so none of its errors either
        return _describe_other(exc)
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return _("the model provider did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        return _("could not reach the model provider")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        # Not its words: they may quote part of the key.
        return _("the model provider refused our credentials")
    if isinstance(exc, openai.RateLimitError):
        # Its words tell a quota that ran out from a limit that passes.
        return _with(
            _("the model provider is rate limiting us; try again shortly"), provider_said(exc)
        )
    if isinstance(exc, openai.APIStatusError):
        reason = _("the model provider answered with an error (%(status)s)") % {
            "status": exc.status_code
        }
        return _with(reason, provider_said(exc))
    if isinstance(exc, openai.APIError):
        return _with(_("the model provider stopped with an error"), provider_said(exc))
    return _describe_other(exc)


def _describe_other(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return _("the answer took too long")
    return _("something went wrong on our side")
