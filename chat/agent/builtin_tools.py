"""The tools every Glassbox agent has; GLASSBOX_TOOLS lists them by dotted path.

Two of them reach outside the agent runtime, to the knowledge base and the outbox, through
what the app provided (chat.agent.services)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.formats import date_format, number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, ngettext
from pydantic import BaseModel, ConfigDict, Field

from activity.presenting.presentation import ToolLabels
from chat.agent.arithmetic import ArithmeticError_, evaluate
from chat.agent.services import provided
from chat.agent.tools import Tool, ToolError, ToolOutcome, ToolRegistry


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchArguments(Arguments):
    query: str = Field(description="What to look for, in a few words.", min_length=1)


SEARCH_LIMIT = 3
INLINE_SEARCH_DOCUMENTS = 500


async def run_search_documents(arguments: SearchArguments) -> ToolOutcome:
    services = provided()
    index = services.fresh_index()
    # In memory and known current: a small one is searched here, with no trip to a thread;
    # a large one's search would hold up every other turn on the event loop.
    if index is not None and len(index.documents) <= INLINE_SEARCH_DOCUMENTS:
        hits = index.search(arguments.query, limit=SEARCH_LIMIT)
    else:
        hits = await sync_to_async(services.search_documents)(arguments.query, SEARCH_LIMIT)
    count = len(hits)
    return ToolOutcome(
        content=[{"title": h.title, "snippet": h.snippet, "score": h.score} for h in hits],
        summary=ngettext("%(count)d document", "%(count)d documents", count) % {"count": count},
        done_message=(
            ngettext("Found %(count)d document", "Found %(count)d documents", count)
            % {"count": count}
            if count
            else _("No matching documents")
        ),
        subject=arguments.query,
    )


SEARCH_DOCUMENTS = Tool(
    name="search_documents",
    description=(
        "Search the company knowledge base (career advice: salaries, interviews, CVs, "
        "reviews, remote work, in several languages). Returns the best-matching documents."
    ),
    arguments=SearchArguments,
    run=run_search_documents,
    title=gettext_lazy("Search the knowledge base"),
    icon="🔍",
    working_message=gettext_lazy("Searching the knowledge base…"),
    labels=ToolLabels(
        icon="📄",
        done=gettext_lazy("Searched the knowledge base"),
        failed=gettext_lazy("Knowledge base query failed"),
    ),
)


class CalculatorArguments(Arguments):
    expression: str = Field(
        description="Plain arithmetic, e.g. '(52000 * 1.07) / 12'. Numbers, + - * / // % ** "
        "and sqrt(), abs(), round() only."
    )


async def run_calculator(arguments: CalculatorArguments) -> ToolOutcome:
    try:
        result = evaluate(arguments.expression)
    except ArithmeticError_ as exc:
        raise ToolError(str(exc)) from None
    shown = _number(result)
    return ToolOutcome(
        content={"expression": arguments.expression, "result": result},
        summary=f"= {shown}",
        done_message=_("Calculated %(expression)s = %(result)s")
        % {"expression": arguments.expression, "result": shown},
    )


def _number(value: int | float) -> str:
    """In the reader's notation (52.000,5 in Italian); huge or tiny floats in e-notation."""
    if isinstance(value, float):
        if value and not 1e-6 <= abs(value) < 1e15:
            return f"{value:.6g}"
        value = float(f"{value:.6g}")
        if value.is_integer():
            value = int(value)
    return number_format(value, force_grouping=True)


CALCULATOR = Tool(
    name="calculator",
    description="Evaluate an arithmetic expression exactly. Use it for any calculation.",
    arguments=CalculatorArguments,
    run=run_calculator,
    title=gettext_lazy("Calculator"),
    icon="🧮",
    working_message=gettext_lazy("Calculating…"),
    labels=ToolLabels(
        icon="🧮",
        done=gettext_lazy("Did a calculation"),
        failed=gettext_lazy("Calculation failed"),
    ),
)


class DateTimeArguments(Arguments):
    timezone: str = Field(
        default="UTC", description="An IANA time zone such as 'Europe/Rome' or 'Asia/Taipei'."
    )


async def run_current_datetime(arguments: DateTimeArguments) -> ToolOutcome:
    try:
        zone = ZoneInfo(arguments.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(
            _("unknown time zone %(zone)s") % {"zone": repr(arguments.timezone[:40])}
        ) from None
    now = datetime.now(UTC).astimezone(zone)
    return ToolOutcome(
        content={"iso": now.isoformat(timespec="seconds"), "timezone": arguments.timezone},
        summary=now.isoformat(timespec="minutes"),
        done_message=_("It is %(when)s in %(zone)s")
        % {"when": date_format(now, "SHORT_DATETIME_FORMAT"), "zone": arguments.timezone},
    )


CURRENT_DATETIME = Tool(
    name="current_datetime",
    description="The current date and time, in a given time zone.",
    arguments=DateTimeArguments,
    run=run_current_datetime,
    title=gettext_lazy("Date and time"),
    icon="🕒",
    working_message=gettext_lazy("Checking the date and time…"),
    labels=ToolLabels(
        icon="🕒",
        done=gettext_lazy("Checked the date and time"),
        failed=gettext_lazy("Clock lookup failed"),
    ),
)


class ContactFormArguments(Arguments):
    topic: str = Field(
        default="", description="What the user wants to talk to a person about, briefly."
    )


async def run_request_contact_form(arguments: ContactFormArguments) -> ToolOutcome:
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


async def run_send_email(arguments: EmailArguments) -> ToolOutcome:
    try:
        validate_email(arguments.to)
    except ValidationError:
        raise ToolError(_("%(to)s is not an email address") % {"to": arguments.to}) from None
    await provided().outbox_add(to=arguments.to, subject=arguments.subject, body=arguments.body)
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


def default_registry() -> ToolRegistry:
    return ToolRegistry.from_paths(settings.GLASSBOX_TOOLS)
