"""A deployment's own tool, registered through the GLASSBOX_TOOLS setting in a test."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection
from pydantic import BaseModel, ConfigDict, Field

from activity.models import ActivityEvent
from activity.presenting.presentation import ToolLabels
from chat.agent.context import ToolContext
from chat.agent.tools import Tool, ToolOutcome, progress_reporter


class WeatherArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    city: str = Field(description="The city to report on.")


async def run_weather(arguments: WeatherArguments, context: ToolContext[Any]) -> ToolOutcome:
    return ToolOutcome(
        content={"city": arguments.city, "sky": "clear", "celsius": 21},
        summary="clear, 21 °C",
        done_message=f"It is clear and 21 °C in {arguments.city}",
    )


WEATHER = Tool(
    name="weather",
    description="Today's weather in a city.",
    arguments=WeatherArguments,
    run=run_weather,
    icon="🌤️",
    working_message="Checking the weather…",
    labels=ToolLabels("🌤️", "Checked the weather", "Weather lookup failed"),
)

NOT_A_TOOL = "weather"


class ChangeArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    record: str = Field(description="The record to change.")
    change: str = Field(description="What to change in it.")


def _calls_on_disk() -> list[dict]:
    # A connection of its own, as an auditor's would be: it sees committed rows only.
    try:
        calls = ActivityEvent.objects.filter(
            kind=ActivityEvent.Kind.TOOL_CALL, tool="change_record"
        )
        return [
            {"call_id": call_id, "arguments": arguments}
            for call_id, arguments in calls.order_by("seq").values_list("call_id", "arguments")
        ]
    finally:
        connection.close()


async def run_change_record(arguments: ChangeArguments, context: ToolContext[Any]) -> ToolOutcome:
    """A tool with side effects: before it changes anything, it reads what the audit holds."""
    found = await sync_to_async(_calls_on_disk, thread_sensitive=False)()
    return ToolOutcome(
        content={"calls_on_disk": found},
        summary=f"changed {arguments.record}",
        done_message=f"Changed {arguments.record}",
    )


CHANGE_RECORD = Tool(
    name="change_record",
    description="Changes a record (a tool with side effects).",
    arguments=ChangeArguments,
    run=run_change_record,
    icon="✏️",
    working_message="Changing the record…",
    labels=ToolLabels("✏️", "Changed a record", "Changing the record failed"),
)


class CountArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = Field(description="How many steps to count.")
    gate: str = Field(description="A folder: step n waits until a file named n is in it.")


async def run_count_slowly(arguments: CountArguments, context: ToolContext[Any]) -> ToolOutcome:
    """Reports each step as progress; from the second on, only once the test lets it."""
    report = progress_reporter()
    for step in range(1, arguments.steps + 1):
        gate = Path(arguments.gate) / str(step)
        # The gate is a file the test writes from another process: polled.
        while step > 1 and not await asyncio.to_thread(gate.exists):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        report(step, arguments.steps, f"Counted {step} of {arguments.steps}")
    done = f"Counted to {arguments.steps}"
    return ToolOutcome(content={"counted": arguments.steps}, summary=done, done_message=done)


COUNT_SLOWLY = Tool(
    name="count_slowly",
    description="Counts, a step at a time.",
    arguments=CountArguments,
    run=run_count_slowly,
    icon="🔢",
    working_message="Counting…",
    labels=ToolLabels("🔢", "Counted", "Counting failed"),
)
