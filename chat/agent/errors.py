"""Provider failures in words a person understands."""

from __future__ import annotations

import openai
from django.utils.translation import gettext as _


class ProviderError(Exception):
    """The provider's reply broke the protocol; the text says how, for people."""


def describe_failure(exc: BaseException) -> str:
    if isinstance(exc, ProviderError):
        return str(exc)
    if isinstance(exc, openai.APITimeoutError):
        return _("the model provider did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        return _("could not reach the model provider")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return _("the model provider refused our credentials")
    if isinstance(exc, openai.RateLimitError):
        return _("the model provider is rate limiting us; try again shortly")
    if isinstance(exc, openai.APIStatusError):
        return _("the model provider answered with an error (%(status)s)") % {
            "status": exc.status_code
        }
    if isinstance(exc, openai.APIError):
        return _("the model provider stopped with an error")
    if isinstance(exc, TimeoutError):
        return _("the answer took too long")
    return _("something went wrong on our side")
