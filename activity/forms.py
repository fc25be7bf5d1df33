from __future__ import annotations

from django import forms
from django.conf import settings

from activity.preferences import DEFAULT_LABELS, FeedPrefs, PreferenceError


class FeedPreferencesForm(forms.Form):
    mode = forms.ChoiceField(
        choices=[
            ("partial", "Partial: the answer streams as it is written"),
            ("block", "Block: the answer arrives a paragraph at a time"),
            ("progress", "Progress: one working draft, replaced by the final answer"),
            ("off", "Off: only the final answer"),
        ],
        widget=forms.RadioSelect,
    )
    label_kind = forms.ChoiceField(
        label="Draft label",
        choices=[("auto", "A word picked from the pool"), ("fixed", "Always:"), ("none", "None")],
        widget=forms.RadioSelect,
    )
    label_text = forms.CharField(label="Fixed label", max_length=40, required=False)
    labels = forms.CharField(
        label="Label pool",
        required=False,
        help_text="Comma-separated; empty uses the built-in pool.",
        widget=forms.TextInput(attrs={"placeholder": ", ".join(DEFAULT_LABELS[:4]) + ", …"}),
    )
    show_after = forms.FloatField(
        label="Show the draft after (seconds)", min_value=0, max_value=120
    )
    max_lines = forms.IntegerField(label="Visible progress lines", min_value=1, max_value=50)
    detail = forms.ChoiceField(
        choices=[("explain", "Explain: concise lines"), ("raw", "Raw: add the tools' arguments")]
    )
    tool_progress = forms.BooleanField(label="Show tool lines", required=False)
    line_width = forms.IntegerField(label="Cut lines at (characters)", min_value=20, max_value=400)

    @classmethod
    def for_prefs(cls, prefs: FeedPrefs, **kwargs) -> FeedPreferencesForm:
        kind = {"auto": "auto", "": "none"}.get(prefs.label, "fixed")
        initial = {
            "mode": prefs.mode,
            "label_kind": kind,
            "label_text": prefs.label if kind == "fixed" else "",
            "labels": "" if list(prefs.labels) == DEFAULT_LABELS else ", ".join(prefs.labels),
            "show_after": prefs.show_after,
            "max_lines": prefs.max_lines,
            "detail": prefs.detail,
            "tool_progress": prefs.tool_progress,
            "line_width": prefs.line_width,
        }
        return cls(initial=initial, **kwargs)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        if data["label_kind"] == "fixed" and not data["label_text"].strip():
            self.add_error("label_text", "Type the label to show, or pick another option.")
            return data
        try:
            self.prefs = FeedPrefs.from_mappings(settings.GLASSBOX_FEED, self.overrides(data))
        except PreferenceError as problem:
            raise forms.ValidationError(str(problem)) from None
        return data

    @staticmethod
    def overrides(data) -> dict:
        label = {"auto": "auto", "none": ""}.get(data["label_kind"], data["label_text"].strip())
        return {
            "MODE": data["mode"],
            "LABEL": label,
            "LABELS": data["labels"] or None,
            "SHOW_AFTER": data["show_after"],
            "MAX_LINES": data["max_lines"],
            "DETAIL": data["detail"],
            "TOOL_PROGRESS": data["tool_progress"],
            "LINE_WIDTH": data["line_width"],
        }

    def changed_overrides(self) -> dict:
        """Only what differs from the server's defaults, so later default changes still apply."""
        defaults = FeedPrefs.from_mappings(settings.GLASSBOX_FEED).as_settings()
        chosen = self.prefs.as_settings()
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in chosen.items()
            if value != defaults[key]
        }
