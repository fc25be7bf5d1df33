"""The plan tool (seed 001's task plans): the agent lays out the steps of a larger piece of
work and ticks them off as it goes. Each call replaces the plan, shown as one checklist line
updated in place (activity.presenting.presentation.plan_line), kept with the feed and in
every export."""

from __future__ import annotations

from typing import Annotated, Literal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from activity.presenting.presentation import PLAN_ICON, PLAN_TOOL, ToolLabels
from activity.recording.events import PLAN_STEP_CHARS, PLAN_STEPS, Plan, PlanStep
from chat.agent.context import ToolContext
from chat.agent.tools import Arguments, Tool, ToolOutcome
from chat.agent.untrusted import one_line


def _shown(text: str) -> str:
    """The model's words as a line shows them; a step with nothing to show is refused."""
    cleaned = one_line(text, PLAN_STEP_CHARS)
    if not cleaned:
        raise ValueError("a step needs words")
    return cleaned


class StepArgument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Longer text is refused rather than cut: the model says it again, shorter.
    text: Annotated[str, Field(max_length=PLAN_STEP_CHARS), AfterValidator(_shown)] = Field(
        description=f"What the step does, in the user's language, at most {PLAN_STEP_CHARS} "
        "characters."
    )
    state: Literal["pending", "in_progress", "done"]


class PlanArguments(Arguments):
    steps: list[StepArgument] = Field(
        min_length=1,
        max_length=PLAN_STEPS,
        description=f"The whole plan, 1 to {PLAN_STEPS} steps in order, each with its state; "
        "at most one in_progress.",
    )


async def run_update_plan(arguments: PlanArguments, context: ToolContext[object]) -> ToolOutcome:
    plan = Plan(steps=tuple(PlanStep(step.text, step.state) for step in arguments.steps))
    done = plan.done
    return ToolOutcome(
        content={"steps": len(plan.steps), "done": done},
        summary=_("%(done)d of %(count)d steps done") % {"done": done, "count": len(plan.steps)},
        done_message="",
        line=plan,
    )


UPDATE_PLAN = Tool(
    name=PLAN_TOOL,
    description=(
        "Show the user your plan for a task of several steps, as a checklist, and update it as "
        "you go: call it first with every step pending (or the first in_progress), then again "
        "whenever a step starts or is done. Each call replaces the whole plan. Not for a "
        "question one search or one calculation answers."
    ),
    arguments=PlanArguments,
    run=run_update_plan,
    title=gettext_lazy("Plan"),
    icon=PLAN_ICON,
    working_message=gettext_lazy("Updating the plan…"),
    labels=ToolLabels(
        icon=PLAN_ICON,
        done=gettext_lazy("Made a plan"),
        failed=gettext_lazy("The plan could not be updated"),
    ),
    user_facing=False,
    quiet=True,
)
