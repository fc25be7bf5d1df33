"""LiteLLM's proxy, a server people put in front of their models, serving the Responses API
over a Chat Completions model: started from its own virtualenv (`make litellm`), on a loopback
port, in front of the tests' scripted provider. Absent, its tests skip, unless
REQUIRE_LITELLM=1 makes that a failure."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ports import free_port
from tests.support.processes import wait_until_healthy
from tests.support.servers import ROOT

LITELLM = Path(os.environ.get("GLASSBOX_LITELLM") or ROOT / ".venv-litellm" / "bin" / "litellm")
# Its start takes half a minute on an idle machine (its imports), more on a busy one.
START_SECONDS = 240


def litellm_or_skip() -> Path:
    if LITELLM.exists():
        return LITELLM
    if os.environ.get("REQUIRE_LITELLM") == "1":
        pytest.fail(f"REQUIRE_LITELLM=1 but {LITELLM} is missing (make litellm installs it)")
    pytest.skip(f"LiteLLM is not installed ({LITELLM}; make litellm installs it)")


@contextlib.contextmanager
def litellm_proxy(work: Path, backend: str, model: str) -> Iterator[tuple[str, str]]:
    """The proxy serving `model` from the Chat Completions server at `backend`; yields its
    base URL (for OPENAI_BASE_URL) and its key. `custom_openai` is a provider LiteLLM has no
    Responses API of its own for: it bridges every /v1/responses to /v1/chat/completions."""
    binary = litellm_or_skip()
    config = work / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        f"  - model_name: {model}\n"
        "    litellm_params:\n"
        f"      model: custom_openai/{model}\n"
        f"      api_base: {backend}\n"
        "      api_key: none\n"
    )
    key = f"sk-{secrets.token_hex(24)}"
    port = free_port()
    # LiteLLM reads DATABASE_URL (and REDIS_*) as its own: the proxy keeps no state here.
    inherited = {
        name: value
        for name, value in os.environ.items()
        if name != "DATABASE_URL" and not name.startswith("REDIS")
    }
    env = {
        **inherited,
        "LITELLM_MASTER_KEY": key,
        # Its price list from the package, not fetched from the network.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
    }
    url = f"http://127.0.0.1:{port}"
    with open(work / "litellm.log", "wb") as log:
        process = subprocess.Popen(
            [str(binary), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_up(url, process, work / "litellm.log")
            yield f"{url}/v1", key
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_up(url: str, process: subprocess.Popen, log: Path) -> None:
    wait_until_healthy("LiteLLM", f"{url}/health/liveliness", START_SECONDS, process, log)
