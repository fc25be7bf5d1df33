"""GLASSBOX_MODEL_API: which API the model is asked through, refused at start-up when it names
none of them, and never the Responses API for the demo model, which speaks Chat Completions."""

from __future__ import annotations

import os
import subprocess
import sys

from chat.turns.policy import agent_policy
from tests.support.servers import ROOT


def test_a_wrong_value_stops_the_start_naming_the_choices():
    env = {**os.environ, "GLASSBOX_MODEL_API": "assistants"}
    run = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip

    assert run.returncode != 0
    assert (
        "GLASSBOX_MODEL_API must be one of chat_completions, responses, not 'assistants'"
        in run.stderr
    )


def test_the_responses_api_is_asked_through_only_with_a_provider(settings):
    settings.GLASSBOX_MODEL_API = "responses"
    settings.OPENAI_API_KEY = ""
    assert agent_policy().model_api == "chat_completions"  # the demo model
    settings.OPENAI_API_KEY = "sk-test"
    assert agent_policy().model_api == "responses"
