"""The production settings docs/deploy.md documents pass Django's deployment checks, the
demo's defaults fail them, and every page carries a strict Content Security Policy."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import run_checks
from django.test import override_settings

from tests.support.servers import ROOT

DEMO_DEFAULTS = ("SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "GLASSBOX_TOKEN_KEY")


def documented_environment() -> dict[str, str]:
    """The `Environment` block of docs/deploy.md, its `…` placeholders filled as an operator
    would: a random secret, a generated Fernet key."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    block = re.search(r"## Environment\n\n```sh\n(.*?)```", text, re.S)
    assert block, "docs/deploy.md lost its Environment block"
    values = dict(
        word.split("=", 1) for word in shlex.split(block.group(1), comments=True) if "=" in word
    )
    filled = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "GLASSBOX_TOKEN_KEY": Fernet.generate_key().decode(),
    }
    return {
        key: filled.get(key, value) if "…" in value else value for key, value in values.items()
    }


def check_deploy(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in DEMO_DEFAULTS}
    env.update(environment, DJANGO_SETTINGS_MODULE="project.settings")
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip


def test_the_documented_production_settings_pass_check_deploy():
    done = check_deploy(documented_environment())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


@pytest.mark.parametrize(
    ("demo_default", "error"),
    [
        ({"SECRET_KEY": settings.DEMO_SECRET_KEY}, "glassbox.E010"),
        ({"DEBUG": True}, "glassbox.E011"),
        ({"ALLOWED_HOSTS": ["127.0.0.1", "localhost"]}, "glassbox.E012"),
        ({"GLASSBOX_TOKEN_KEY": ""}, "glassbox.E013"),
    ],
)
def test_check_deploy_fails_on_what_only_the_demo_may_use(demo_default, error):
    """Each demo default left in place (or DEBUG turned on) fails the check with its reason,
    even with a real model key: the demo's public SECRET_KEY used to pass."""
    production = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": False,
        "ALLOWED_HOSTS": ["chat.example.com"],
        "GLASSBOX_TOKEN_KEY": Fernet.generate_key().decode(),
        "GLASSBOX_MODEL": "gpt-4o-mini",
    }
    with override_settings(**{**production, **demo_default}):
        found = [m.id for m in run_checks(include_deployment_checks=True) if m.is_serious()]
    assert [i for i in found if i and i.startswith("glassbox.")] == [error]


@pytest.mark.django_db
def test_pages_carry_a_strict_content_security_policy(alice_client, alice_conversation):
    response = alice_client.get(alice_conversation.get_absolute_url())
    policy = response["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in policy
    assert "img-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    nonce = policy.split("'nonce-")[1].split("'")[0]
    html = response.content.decode()
    assert html.count(f'nonce="{nonce}"') >= 3  # htmx, its ws extension, glassbox.js
    assert '"allowEval": false' in html and '"allowScriptTags": false' in html
