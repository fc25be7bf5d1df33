"""The agent is handed its policy by the turn pipeline; it reads no settings for it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chat.agent
from chat.models import ToolApproval
from chat.turns.deps import Dependencies
from tests.support.fakes import RecordedProvider, scripted_client
from tests.support.turns import run_turn

# The agent's modules that decide what it does; the client and the tools' own configuration
# (keys, GLASSBOX_TOOLS, MCP servers) are read where those are built.
DECIDING = ("loop", "approval", "running", "calls", "tools", "policy", "outcome")


@pytest.mark.parametrize("module", DECIDING)
def test_the_agent_s_deciding_modules_read_no_settings(module):
    source = Path(chat.agent.__path__[0], f"{module}.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    assert not {name for name in imported if name.startswith(("django.conf", "project.settings"))}


# Transactions of their own: a turn closes its database connections as a request would.
@pytest.mark.django_db(transaction=True)
def test_a_turn_asks_for_usage_in_the_stream_only_when_the_deployment_says_so(
    alice_conversation, settings
):
    settings.GLASSBOX_STREAM_USAGE = False
    transport = RecordedProvider("openai_text.sse")
    run_turn(
        alice_conversation, "Hi", Dependencies(client_factory=lambda: scripted_client(transport))
    )

    assert "stream_options" not in transport.requests[0]


@pytest.mark.django_db(transaction=True)
def test_a_tool_the_deployment_names_asks_first_though_it_would_not_by_itself(
    alice_conversation, settings
):
    settings.GLASSBOX_APPROVAL = {"calculator": True}

    answer = run_turn(alice_conversation, "What is 12 * 7?")

    assert answer.state == "waiting"
    assert ToolApproval.objects.get(answer=answer).tool == "calculator"
