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
        from activity.preferences.feed_prefs import FeedPrefs, PreferenceError

        try:
            FeedPrefs.from_mappings(settings.GLASSBOX_FEED)
        except (PreferenceError, ValueError) as exc:
            # Each message starts with the key it is about: "MODE must be one of …".
            key = str(exc).split()[0]
            name = "GLASSBOX_SHOW_REASONING" if key == "SHOW_REASONING" else f"GLASSBOX_FEED_{key}"
            raise ImproperlyConfigured(f"{name}: {exc}") from None
        from activity.usage import configured_prices

        try:
            configured_prices()
        except ValueError as exc:
            raise ImproperlyConfigured(f"GLASSBOX_PRICES: {exc}") from None
