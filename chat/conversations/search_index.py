"""What a search on PostgreSQL matches messages by, and what its full-text index holds
(chat/migrations/0020_message_search.py): one expression, or the index is not used."""

from __future__ import annotations

from typing import Any


def message_vector() -> Any:
    # Imported when asked: django.contrib.postgres loads psycopg, which SQLite never needs.
    from django.contrib.postgres.search import SearchVector

    # The "simple" configuration: no stemming for one language, since answers come in many.
    return SearchVector("content", config="simple")
