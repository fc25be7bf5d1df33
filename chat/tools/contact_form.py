"""The tool that opens a contact form in the user's page."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from pydantic import Field

from activity.presenting.presentation import ToolLabels
from chat.agent.tools import Arguments, Tool, ToolOutcome
from chat.tools.context import AppContext


class ContactFormArguments(Arguments):
    topic: str = Field(
        default="", description="What the user wants to talk to a person about, briefly."
    )


async def run_request_contact_form(
    arguments: ContactFormArguments, context: AppContext
) -> ToolOutcome:
    # The page shows the form when it sees this tool's done line; nothing to fetch here.
    return ToolOutcome(
        content={"shown": True, "note": "A contact form is now open in the user's page."},
        summary=_("form shown"),
        done_message=_("Opened a contact form"),
    )


REQUEST_CONTACT_FORM = Tool(
    name="request_contact_form",
    description=(
        "Open a contact form in the user's page so they can reach a human advisor. Use it when "
        "the user asks to talk to a person or to be contacted."
    ),
    arguments=ContactFormArguments,
    run=run_request_contact_form,
    title=gettext_lazy("Contact form"),
    icon="📝",
    working_message=gettext_lazy("Opening a contact form…"),
    labels=ToolLabels(
        icon="📝",
        done=gettext_lazy("Opened a contact form"),
        failed=gettext_lazy("Contact form failed"),
    ),
    user_facing=False,
)
