"""The settings of the Glassbox processes the tests serve: the project's own, with the fast
password hasher Django's testing guide advises first. A run logs in hundreds of times, and
each login with Django's default hasher (PBKDF2, 1,200,000 rounds) costs its server half a
second of CPU. A hash the default made is still read, and rewritten with the fast one."""

from __future__ import annotations

from django.conf import global_settings

from project.settings import *  # noqa: F403

FAST = "django.contrib.auth.hashers.MD5PasswordHasher"
PASSWORD_HASHERS = [FAST, *global_settings.PASSWORD_HASHERS]
