"""The production settings docs/deploy.md documents pass Django's deployment checks, and every
page carries a strict Content Security Policy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.servers import ROOT

PRODUCTION = {
    "SECRET_KEY": "a-long-random-production-secret-" + "x7Kq9" * 10,
    "ALLOWED_HOSTS": "chat.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://chat.example.com",
    "SECURE_COOKIES": "1",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_PRELOAD": "1",
    "BEHIND_TLS_PROXY": "1",
}


def test_the_documented_production_settings_pass_check_deploy():
    env = {**os.environ, **PRODUCTION, "DJANGO_SETTINGS_MODULE": "project.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


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
