"""What a search on PostgreSQL matches messages by, and what its full-text index holds
(chat/migrations/0022_message_owner_search.py): one expression, or the index is not used;
the index is keyed by the messages' owner first, so a search reads the asker's matches
alone."""

from __future__ import annotations

from typing import Any

from django.db.models import Expression, IntegerField
from django.db.models.expressions import Col

# The owner of each message's conversation, kept by the database on PostgreSQL alone (the
# migration's trigger): not a field of the model, which SQLite's tables lack.
OWNER_COLUMN = "owner_id"
SEARCH_INDEX = "message_owner_search"

_owner_field = IntegerField()
_owner_field.set_attributes_from_name(OWNER_COLUMN)


def message_vector() -> Any:
    # Imported when asked: django.contrib.postgres loads psycopg, which SQLite never needs.
    from django.contrib.postgres.search import SearchVector

    # The "simple" configuration: no stemming for one language, since answers come in many.
    return SearchVector("content", config="simple")


def words_query(words: list[str]) -> Any:
    """A query a message matches when it holds any of the words: all of them in one look at
    the index."""
    from django.contrib.postgres.search import SearchQuery

    found = SearchQuery(words[0], search_type="plain", config="simple")
    for word in words[1:]:
        found |= SearchQuery(word, search_type="plain", config="simple")
    return found


class MessageOwner(Expression):
    """The owner column of the messages a queryset reads, under whatever alias they get
    (a subquery's are renamed)."""

    output_field = IntegerField()

    def resolve_expression(self, query=None, *args: Any, **kwargs: Any) -> Any:
        assert query is not None
        return Col(query.get_initial_alias(), _owner_field, self.output_field)
