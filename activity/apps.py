from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class ActivityConfig(AppConfig):
    name = "activity"
    verbose_name = "Activity feeds"

    def ready(self) -> None:
        """A feed setting the feed cannot show stops start-up, naming the setting."""
        import project.checks  # noqa: F401 - registers the project's checks
        from activity.preferences.feed_prefs import (
            SURFACES,
            FeedPrefs,
            PreferenceError,
            check_surfaces,
            surface_prefs,
        )

        try:
            FeedPrefs.from_mappings(settings.GLASSBOX_FEED)
        except (PreferenceError, ValueError) as exc:
            # Each message starts with the key it is about: "MODE must be one of …".
            key = str(exc).split()[0]
            name = "GLASSBOX_SHOW_REASONING" if key == "SHOW_REASONING" else f"GLASSBOX_FEED_{key}"
            raise ImproperlyConfigured(f"{name}: {exc}") from None
        per_surface = settings.GLASSBOX_FEED_SURFACES
        try:
            check_surfaces(per_surface)
            for surface in SURFACES:
                try:
                    surface_prefs(surface, settings.GLASSBOX_FEED, per_surface)
                except (PreferenceError, ValueError) as exc:
                    raise PreferenceError(f"{surface}: {exc}") from None
        except PreferenceError as exc:
            raise ImproperlyConfigured(f"GLASSBOX_FEED_SURFACES: {exc}") from None
        from activity.usage import configured_prices

        try:
            configured_prices()
        except ValueError as exc:
            raise ImproperlyConfigured(f"GLASSBOX_PRICES: {exc}") from None
