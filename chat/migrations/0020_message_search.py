"""A full-text index of messages on PostgreSQL, for the history's search; nothing elsewhere
(SQLite's search reads the user's messages: chat.conversations.selectors)."""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations

SEARCH_INDEX = "message_search"


def _index():
    from chat.conversations.search_index import message_vector

    return GinIndex(message_vector(), name=SEARCH_INDEX)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("chat", "Message"), _index())


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("chat", "Message"), _index())


class Migration(migrations.Migration):
    dependencies = [("chat", "0019_history_indexes")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
