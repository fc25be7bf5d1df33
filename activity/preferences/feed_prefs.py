"""How a user wants the live feed presented: the GLASSBOX_FEED settings, overridden per user.

Plain Python (and gettext); the stored overrides live on activity.models.FeedPreferences."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from django.utils.translation import gettext, gettext_noop, pgettext_lazy

from activity.recording.events import LOG_LEVELS

MODES = ("partial", "block", "progress", "off")
DETAILS = ("explain", "raw")
SHOW_REASONING = ("full", "duration", "off")
# Seed 001's `render`: "rich" shows a line as fields (icon, action, subject, detail, outcome,
# duration) where the surface can; "plain" as one text. Either reads the same.
RENDERS = ("plain", "rich")
# The seed's default pool: one word and an ellipsis. Translated as one text, so a language
# may have as many words as suit it.
DEFAULT_POOL = gettext_noop(
    "Thinking... Shelling... Scuttling... Clawing... Pinching... Molting... Bubbling... "
    "Tiding... Reefing... Cracking... Sifting... Brining... Nautiling... Krilling... "
    "Barnacling... Lobstering... Tidepooling... Pearling... Snapping... Surfacing..."
)
DEFAULT_LABELS = DEFAULT_POOL.split()


def default_labels() -> list[str]:
    """The default pool in the active language."""
    return gettext(DEFAULT_POOL).split()


# MCP's log levels (RFC 5424's), as a reader sees them.
LOG_LEVEL_WORDS = {
    "debug": pgettext_lazy("log level", "debug"),
    "info": pgettext_lazy("log level", "info"),
    "notice": pgettext_lazy("log level", "notice"),
    "warning": pgettext_lazy("log level", "warning"),
    "error": pgettext_lazy("log level", "error"),
    "critical": pgettext_lazy("log level", "critical"),
    "alert": pgettext_lazy("log level", "alert"),
    "emergency": pgettext_lazy("log level", "emergency"),
}


class PreferenceError(ValueError):
    """A setting or preference with a value outside what it accepts."""


@dataclass(frozen=True, slots=True)
class FeedPrefs:
    mode: str = "partial"
    # "auto" picks from labels; "" shows no label; anything else is a fixed label.
    label: str = "auto"
    labels: tuple[str, ...] = tuple(DEFAULT_LABELS)
    show_after: float = 5.0
    max_lines: int = 6
    detail: str = "explain"
    tool_progress: bool = True
    line_width: int = 80
    # Tokens and cost on the folded feed, beside the steps and the time.
    show_usage: bool = False
    # 👍/👎 under finished answers and on their tool calls' lines (GLASSBOX_RATINGS off for
    # the site hides them for everyone).
    show_ratings: bool = True
    # Set for the site (GLASSBOX_SHOW_REASONING), not per user.
    show_reasoning: str = "full"
    render: str = "plain"
    # The least severe MCP log message shown under its call's line (all are recorded).
    mcp_log_level: str = "warning"

    def __post_init__(self) -> None:
        if not isinstance(self.label, str):
            raise PreferenceError("LABEL must be auto, false, or the label to show")
        if self.mode not in MODES:
            raise PreferenceError(f"MODE must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.detail not in DETAILS:
            raise PreferenceError(f"DETAIL must be explain or raw, not {self.detail!r}")
        if self.render not in RENDERS:
            raise PreferenceError(f"RENDER must be plain or rich, not {self.render!r}")
        if self.show_reasoning not in SHOW_REASONING:
            raise PreferenceError(
                f"SHOW_REASONING must be one of {', '.join(SHOW_REASONING)}, "
                f"not {self.show_reasoning!r}"
            )
        if self.mcp_log_level not in LOG_LEVELS:
            raise PreferenceError(
                f"MCP_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {self.mcp_log_level!r}"
            )
        if not self.labels:
            raise PreferenceError("LABELS must name at least one label")
        if self.show_after < 0:
            raise PreferenceError("SHOW_AFTER must be zero or more seconds")
        if not 1 <= self.max_lines <= 50:
            raise PreferenceError("MAX_LINES must be between 1 and 50")
        # 0 leaves the text uncut: a program's default (see surface_prefs).
        if self.line_width != 0 and not 20 <= self.line_width <= 400:
            raise PreferenceError("LINE_WIDTH must be 0 (uncut) or between 20 and 400")

    def label_for(self, turn_id: int) -> str:
        """The draft's label; a turn keeps the same auto label however often it is drawn."""
        if self.label != "auto":
            return self.label
        pool = default_labels() if list(self.labels) == DEFAULT_LABELS else self.labels
        return pool[turn_id % len(pool)]

    @classmethod
    def from_mappings(cls, *layers: Mapping[str, Any]) -> FeedPrefs:
        """Later layers win; keys are the settings' upper-case names."""
        values: dict[str, Any] = {}
        names = {f.name for f in fields(cls)}
        for layer in layers:
            for key, value in layer.items():
                name = key.lower()
                if name not in names:
                    raise PreferenceError(f"unknown feed setting {key!r}")
                if value is not None:
                    values[name] = _coerce(name, value)
        return cls(**values)

    def as_settings(self) -> dict[str, Any]:
        return {f.name.upper(): getattr(self, f.name) for f in fields(self)}


# Seed 001 writes `label: false`; in the environment that is GLASSBOX_FEED_LABEL=false.
NO_LABEL = {"false", "off", "no", "0"}


def _coerce(name: str, value: Any) -> Any:
    if name == "label" and (
        value is False or (isinstance(value, str) and value.lower() in NO_LABEL)
    ):
        return ""
    if name == "labels":
        if isinstance(value, str):
            value = value.split(",")
        return tuple(str(v).strip() for v in value if str(v).strip())
    if name in {"tool_progress", "show_usage", "show_ratings"} and isinstance(value, str):
        return value.lower() not in {"0", "false", "no", "off"}
    if name in {"max_lines", "line_width"}:
        return int(value)
    if name == "show_after":
        return float(value)
    return value


# Where the feed is shown: the web page, or a program on the JSON socket or over SSE.
SURFACES = ("page", "program")
# The key of a user's stored overrides that holds their program's; every other key is the
# page's, as rows saved before surfaces existed hold them.
PROGRAM_KEY = "program"
# What a program gets where neither the site nor its user says otherwise: every frame as it
# comes, the arguments in tool_call frames, texts uncut, no label frame.
PROGRAM_DEFAULTS: dict[str, Any] = {
    "MODE": "partial",
    "LABEL": "",
    "DETAIL": "raw",
    "TOOL_PROGRESS": True,
    "LINE_WIDTH": 0,
    # Status frames carry a `fields` object beside their text.
    "RENDER": "rich",
    # Every log message a call's MCP server sent.
    "MCP_LOG_LEVEL": "debug",
}
# Set for the whole site, whatever the surface.
SITE_ONLY = ("SHOW_REASONING",)


def surface_prefs(
    surface: str,
    site: Mapping[str, Any],
    # GLASSBOX_FEED_SURFACES, checked at start-up by check_surfaces.
    per_surface: Any,
    stored: Mapping[str, Any] | None = None,
) -> FeedPrefs:
    """One surface's settings: the page's start from GLASSBOX_FEED, a program's from
    PROGRAM_DEFAULTS; then GLASSBOX_FEED_SURFACES[surface], then what the user saved."""
    if surface not in SURFACES:
        raise PreferenceError(f"a surface is one of {', '.join(SURFACES)}, not {surface!r}")
    layer = per_surface.get(surface) or {}
    if not isinstance(layer, Mapping):
        raise PreferenceError(f"{surface} must be an object of feed settings")
    stored = stored or {}
    if surface == "page":
        user = {k: v for k, v in stored.items() if k != PROGRAM_KEY}
        prefs = FeedPrefs.from_mappings(site, layer, user)
        if prefs.line_width == 0:
            raise PreferenceError("LINE_WIDTH must be between 20 and 400 on the page")
        return prefs
    shared = {key: site[key] for key in SITE_ONLY if key in site}
    user = stored.get(PROGRAM_KEY) or {}
    return FeedPrefs.from_mappings(PROGRAM_DEFAULTS, shared, layer, user)


def check_surfaces(per_surface: Any) -> None:
    """GLASSBOX_FEED_SURFACES names only surfaces, each with settings they accept."""
    if not isinstance(per_surface, Mapping):
        raise PreferenceError('must be an object: {"page": {…}, "program": {…}}')
    for name in per_surface:
        if name not in SURFACES:
            raise PreferenceError(f"a surface is one of {', '.join(SURFACES)}, not {name!r}")
        layer = per_surface[name]
        if not isinstance(layer, Mapping):
            raise PreferenceError(f"{name} must be an object of feed settings")
        for key in layer:
            if str(key).upper() in SITE_ONLY:
                raise PreferenceError(f"{name}: {key} is set for the whole site only")


class ReaderSettings(NamedTuple):
    """What a user chose for their pages: how the feed is shown, and the language they saved
    ('' follows the browser)."""

    feed: FeedPrefs
    language: str
