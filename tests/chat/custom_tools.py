"""A deployment's own tool, registered through the GLASSBOX_TOOLS setting in a test."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from activity.presentation import ToolLabels
from chat.agent.tools import Tool, ToolOutcome


class WeatherArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    city: str = Field(description="The city to report on.")


async def run_weather(arguments: WeatherArguments) -> ToolOutcome:
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
