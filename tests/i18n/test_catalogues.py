"""The catalogues ship complete: every translatable text of the code is in each one, and
translated. A text added to the code but not translated fails here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
LOCALES = ["it", "zh_Hant"]
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")
# Files only.
pytestmark = pytest.mark.own_site


def catalogue(locale: str, root: Path = ROOT):
    with open(root / "locale" / locale / "LC_MESSAGES" / "django.po", "rb") as po:
        return read_po(po, locale=locale)


def msgids(locale: str, root: Path = ROOT) -> set:
    ids = (message.id for message in catalogue(locale, root) if message.id)
    return {id if isinstance(id, str) else tuple(id) for id in ids}


@pytest.mark.parametrize("locale", LOCALES)
def test_every_text_is_translated_with_the_same_placeholders(locale):
    problems = []
    for message in catalogue(locale):
        if not message.id:
            continue
        english = message.id if isinstance(message.id, tuple) else (message.id,)
        translated = message.string if isinstance(message.string, tuple) else (message.string,)
        wanted = set(PLACEHOLDER.findall(english[-1]))
        if message.fuzzy or not all(translated):
            problems.append(f"untranslated: {english[0]!r}")
        elif any(set(PLACEHOLDER.findall(text)) != wanted for text in translated):
            problems.append(f"placeholders differ: {english[0]!r}")
    assert problems == []


def test_the_catalogues_hold_every_translatable_text(tmp_path):
    """Extracts the texts again (Django's makemessages, with GNU gettext) from a copy of the
    code and compares them with the shipped catalogues."""
    if shutil.which("xgettext") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install GNU gettext (xgettext) to check the catalogues")
        pytest.skip("GNU gettext (xgettext) is not installed")
    for name in ["manage.py", "project", "chat", "activity", "templates", "locale"]:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("*.mo"))
        else:
            shutil.copy(source, tmp_path / name)
    command = [sys.executable, "manage.py", "makemessages", "--no-obsolete", "--add-location",
               "file", *(f"-l{locale}" for locale in LOCALES)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "DJANGO_SETTINGS_MODULE": "project.settings"}
    subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True)
    for locale in LOCALES:
        extracted, shipped = msgids(locale, tmp_path), msgids(locale)
        assert sorted(map(str, extracted - shipped)) == [], f"run `make messages` ({locale})"
        assert sorted(map(str, shipped - extracted)) == [], f"stale texts in {locale}"
