"""The tool that sends an e-mail on the user's behalf, once they approved it: it lands in the
outbox under the person who asked (chat.conversations.outbox), never in a mailbox."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop
from pydantic import Field

from activity.presenting.presentation import ToolLabels
from chat.agent.tools import Arguments, Tool, ToolError, ToolOutcome
from chat.tools.context import AppContext


# The titles and descriptions are the model's in English, and a card's in the reader's
# language (marked here, translated where the card is drawn: chat.asks.approval_cards).
class EmailArguments(Arguments):
    to: str = Field(
        title=gettext_noop("To"),
        description=gettext_noop("The recipient's email address."),
        min_length=3,
        max_length=254,
        json_schema_extra={"format": "email"},
    )
    subject: str = Field(
        title=gettext_noop("Subject"),
        description=gettext_noop("The subject line."),
        min_length=1,
        max_length=200,
    )
    body: str = Field(
        title=gettext_noop("Message"),
        description=gettext_noop("The message, in plain text."),
        min_length=1,
        max_length=5000,
    )


async def run_send_email(arguments: EmailArguments, context: AppContext) -> ToolOutcome:
    try:
        validate_email(arguments.to)
    except ValidationError:
        raise ToolError(_("%(to)s is not an email address") % {"to": arguments.to}) from None
    await context.services.outbox(
        owner_id=context.user.id, to=arguments.to, subject=arguments.subject, body=arguments.body
    )
    return ToolOutcome(
        content={"sent": True, "to": arguments.to, "subject": arguments.subject},
        summary=_("to %(to)s") % {"to": arguments.to},
        done_message=_("The email to %(to)s is in the outbox") % {"to": arguments.to},
    )


SEND_EMAIL = Tool(
    name="send_email",
    description=(
        "Send an email on the user's behalf. The user is asked to approve each email before "
        "it goes (in this demo it lands in an outbox and is never delivered)."
    ),
    arguments=EmailArguments,
    run=run_send_email,
    title=gettext_lazy("Send an email"),
    icon="📧",
    working_message=gettext_lazy("Writing an email…"),
    labels=ToolLabels(
        icon="📧",
        done=gettext_lazy("Sent an email"),
        failed=gettext_lazy("Email not sent"),
    ),
    needs_approval=True,
)
