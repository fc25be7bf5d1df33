"""A user of a served Glassbox with feed preferences of their own, made through its
management shell (the server has its own database)."""

from __future__ import annotations

import json

from tests.support.servers import manage


def user_with_feed(env: dict, username: str, overrides: dict) -> None:
    """Creates (again) `username`, password `<username>-password`, with these overrides."""
    code = (
        "import json; "
        "from django.contrib.auth import get_user_model; "
        "from activity.models import FeedPreferences; "
        f"get_user_model().objects.filter(username={username!r}).delete(); "
        f"user = get_user_model().objects.create_user({username!r}, "
        f"password={username + '-password'!r}); "
        "FeedPreferences.objects.create(user=user, "
        f"overrides=json.loads({json.dumps(overrides)!r}))"
    )
    manage(env, "shell", "-c", code)
