"""The pure tools every Glassbox agent may have (arithmetic, the clock): they touch nothing
outside the agent runtime. Those that touch the app live in chat.tools; GLASSBOX_TOOLS lists
them all by dotted path."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils.formats import date_format, number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from pydantic import Field

from activity.presenting.presentation import ToolLabels
from chat.agent.arithmetic import ArithmeticError_, evaluate
from chat.agent.context import ToolContext
from chat.agent.tools import Arguments, Tool, ToolError, ToolOutcome


class CalculatorArguments(Arguments):
    expression: str = Field(
        description="Plain arithmetic, e.g. '(52000 * 1.07) / 12'. Numbers, + - * / // % ** "
        "and sqrt(), abs(), round() only."
    )


async def run_calculator(arguments: CalculatorArguments, context: ToolContext[Any]) -> ToolOutcome:
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


async def run_current_datetime(
    arguments: DateTimeArguments, context: ToolContext[Any]
) -> ToolOutcome:
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
