"""Typed readers for settings that come from the environment."""

from __future__ import annotations

import json
import os


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name} must be a boolean (1/0, true/false), not {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {value!r}") from None


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """One of `choices`; anything else is refused, naming them."""
    value = os.environ.get(name) or default
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_json(name: str, default: str = "{}") -> object:
    """A setting written as JSON; what it must hold is checked where it is used."""
    value = os.environ.get(name) or default
    try:
        return json.loads(value)
    except ValueError as exc:
        raise ValueError(f"{name} must be JSON ({exc})") from None


def approval_setting(value: str) -> dict[str, bool]:
    """A JSON object of tool names and true or false."""
    if not value.strip():
        return {}
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(v, bool) for v in data.values()):
        raise ValueError(
            'expected an object of tool names and true or false, e.g. {"send_email": false}'
        )
    return data
