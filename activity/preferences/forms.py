from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from activity.preferences.feed_prefs import (
    DEFAULT_LABELS,
    LOG_LEVEL_WORDS,
    PROGRAM_KEY,
    FeedPrefs,
    PreferenceError,
    default_labels,
    surface_prefs,
)


def surface_defaults(surface: str) -> FeedPrefs:
    """A surface's settings before any user's choice."""
    return surface_prefs(surface, settings.GLASSBOX_FEED, settings.GLASSBOX_FEED_SURFACES)


class _SurfacePreferencesForm(forms.Form):
    """What the page's and a program's forms share: the label read as a kind and a text,
    the choices checked by the surface's own rules (`self.prefs`), and only what differs
    from the surface's defaults kept, so later default changes still apply."""

    surface: ClassVar[str]

    @classmethod
    def initial_from(cls, prefs: FeedPrefs) -> dict[str, Any]:
        kind = {"auto": "auto", "": "none"}.get(prefs.label, "fixed")
        return {
            "mode": prefs.mode,
            "label_kind": kind,
            "label_text": prefs.label if kind == "fixed" else "",
            "detail": prefs.detail,
            "tool_progress": prefs.tool_progress,
            "line_width": prefs.line_width,
            "render_as": prefs.render,
        }

    def chosen(self, data: dict[str, Any]) -> dict[str, Any]:
        """The settings the form sets, by their upper-case names; None leaves one as it is."""
        label = {"auto": "auto", "none": ""}.get(data["label_kind"], data["label_text"].strip())
        return {
            "MODE": data["mode"],
            "LABEL": label,
            "DETAIL": data["detail"],
            "TOOL_PROGRESS": data["tool_progress"],
            "LINE_WIDTH": data["line_width"],
            # A form from before RENDER existed keeps the reader's choice.
            "RENDER": data.get("render_as") or None,
        }

    def stored(self, chosen: dict[str, Any]) -> dict[str, Any]:
        """`chosen` where a user's overrides keep it."""
        return chosen

    def clean(self):
        data = super().clean()
        if self.errors or data is None:
            return data
        if data["label_kind"] == "fixed" and not data["label_text"].strip():
            self.add_error("label_text", _("Type the label to show, or pick another option."))
            return data
        try:
            self.prefs = surface_prefs(
                self.surface,
                settings.GLASSBOX_FEED,
                settings.GLASSBOX_FEED_SURFACES,
                self.stored(self.chosen(data)),
            )
        except PreferenceError as problem:
            raise forms.ValidationError(str(problem)) from None
        return data

    def changed_overrides(self) -> dict[str, Any]:
        """Only what differs from the surface's defaults."""
        defaults = surface_defaults(self.surface).as_settings()
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in self.prefs.as_settings().items()
            if value != defaults[key]
        }


class FeedPreferencesForm(_SurfacePreferencesForm):
    """The page's feed settings, and the reader's language."""

    surface = "page"
    language = forms.ChoiceField(
        label=_("Language"),
        choices=[("", _("The browser's language")), *settings.LANGUAGES],
        required=False,
    )
    mode = forms.ChoiceField(
        label=_("Live mode"),
        choices=[
            ("partial", _("Partial: the answer streams as it is written")),
            ("block", _("Block: the answer arrives a paragraph at a time")),
            ("progress", _("Progress: one working draft, replaced by the final answer")),
            ("off", _("Off: only the final answer")),
        ],
        widget=forms.RadioSelect,
    )
    label_kind = forms.ChoiceField(
        label=_("Draft label"),
        choices=[
            ("auto", _("A word picked from the pool")),
            ("fixed", _("Always:")),
            ("none", _("None")),
        ],
        widget=forms.RadioSelect,
    )
    label_text = forms.CharField(label=_("Fixed label"), max_length=40, required=False)
    labels = forms.CharField(
        label=_("Label pool"),
        required=False,
        help_text=_("Comma-separated; empty uses the built-in pool."),
        widget=forms.TextInput(),
    )
    show_after = forms.FloatField(
        label=_("Show the draft after (seconds)"), min_value=0, max_value=120
    )
    max_lines = forms.IntegerField(label=_("Visible progress lines"), min_value=1, max_value=50)
    detail = forms.ChoiceField(
        label=_("Detail"),
        choices=[
            ("explain", _("Explain: concise lines")),
            ("raw", _("Raw: add the tools' arguments")),
        ],
    )
    tool_progress = forms.BooleanField(label=_("Show tool lines"), required=False)
    line_width = forms.IntegerField(
        label=_("Cut lines at (characters)"), min_value=20, max_value=400
    )
    show_usage = forms.BooleanField(
        label=_("Show tokens and cost on folded feeds"), required=False
    )
    mcp_log_level = forms.ChoiceField(
        label=_("Show MCP servers' log messages from"),
        choices=list(LOG_LEVEL_WORDS.items()),
        help_text=_("Each is a line under its call; every one is recorded whatever you choose."),
        required=False,
    )
    show_ratings = forms.BooleanField(
        label=_("Show 👍/👎 to rate answers and their steps"), required=False
    )
    render_as = forms.ChoiceField(
        label=_("Lines"),
        choices=[
            ("plain", _("Plain: one text per line")),
            ("rich", _("Rich: action, subject and detail apart, times lined up")),
        ],
        required=False,
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        pool = default_labels()
        self.fields["labels"].widget.attrs["placeholder"] = ", ".join(pool[:4]) + ", …"

    @classmethod
    def for_prefs(cls, prefs: FeedPrefs, language: str = "", **kwargs) -> FeedPreferencesForm:
        return cls(initial={**cls.initial_from(prefs), "language": language}, **kwargs)

    @classmethod
    def initial_from(cls, prefs: FeedPrefs) -> dict[str, Any]:
        return {
            **super().initial_from(prefs),
            "labels": "" if list(prefs.labels) == DEFAULT_LABELS else ", ".join(prefs.labels),
            "show_after": prefs.show_after,
            "max_lines": prefs.max_lines,
            "show_usage": prefs.show_usage,
            "mcp_log_level": prefs.mcp_log_level,
            "show_ratings": prefs.show_ratings,
        }

    def clean_labels(self) -> str:
        labels = self.cleaned_data["labels"]
        if labels and not labels.replace(",", "").strip():
            raise forms.ValidationError(_("Name at least one label, or leave this empty."))
        return labels

    def chosen(self, data: dict[str, Any]) -> dict[str, Any]:
        return {
            **super().chosen(data),
            "LABELS": data["labels"] or None,
            "SHOW_AFTER": data["show_after"],
            "MAX_LINES": data["max_lines"],
            "SHOW_USAGE": data["show_usage"],
            # A form from before MCP_LOG_LEVEL existed keeps the reader's choice.
            "MCP_LOG_LEVEL": data.get("mcp_log_level") or None,
            "SHOW_RATINGS": data["show_ratings"],
        }


class ProgramPreferencesForm(_SurfacePreferencesForm):
    """What a program (the JSON socket, SSE) is sent; docs/feed.md ("The page and programs")
    says what each setting means there."""

    surface = "program"
    prefix = PROGRAM_KEY
    mode = forms.ChoiceField(
        label=_("Answer text"),
        choices=[
            ("partial", _("As it is written")),
            ("block", _("A paragraph at a time")),
            ("progress", _("All at once at the end, after a label")),
            ("off", _("All at once at the end, with no tool events")),
        ],
        widget=forms.RadioSelect,
    )
    label_kind = forms.ChoiceField(
        label=_("Label event (when the answer comes after a label)"),
        choices=[
            ("none", _("None")),
            ("auto", _("A word picked from the pool")),
            ("fixed", _("Always:")),
        ],
        widget=forms.RadioSelect,
    )
    label_text = forms.CharField(label=_("Fixed label"), max_length=40, required=False)
    detail = forms.ChoiceField(
        label=_("Tool arguments"),
        choices=[
            ("raw", _("Sent (tool_call events)")),
            ("explain", _("Not sent")),
        ],
    )
    tool_progress = forms.BooleanField(label=_("Send tool events"), required=False)
    line_width = forms.IntegerField(
        label=_("Cut status messages at (characters, 0 for never)"), min_value=0, max_value=400
    )
    render_as = forms.ChoiceField(
        label=_("Fields"),
        choices=[
            ("rich", _("Status events carry their line as fields")),
            ("plain", _("Text only")),
        ],
        required=False,
    )

    @classmethod
    def for_prefs(cls, prefs: FeedPrefs, **kwargs) -> ProgramPreferencesForm:
        return cls(initial=cls.initial_from(prefs), **kwargs)

    @classmethod
    def posted(cls, data) -> bool:
        """A form that posts no program section leaves the program's settings as saved."""
        return f"{cls.prefix}-mode" in data

    def stored(self, chosen: dict[str, Any]) -> dict[str, Any]:
        return {PROGRAM_KEY: chosen}
