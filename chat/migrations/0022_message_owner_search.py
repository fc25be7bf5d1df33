"""On PostgreSQL, each message carries its conversation's owner, and the full-text index is
keyed by owner first, so a search reads the asker's matches alone: a word in most messages
(214,000 of a million-event history) was read whole for every search, whoever asked
(bench/history_scale.py). Nothing elsewhere: SQLite's search reads the asker's messages.

The owner is the database's to keep, as an index keeps its entries: a trigger copies it
from the conversation on every insert, whichever code writes the row (the runner, COPY in
bench/history_data.py, a test), and a conversation given to someone else takes its messages
along. The column is not the models': no code reads or writes it but the search
(chat.conversations.search_index)."""

from django.contrib.postgres.operations import BtreeGinExtension
from django.db import migrations

# The names chat.conversations.search_index reads (kept here as they were then).
OWNER_COLUMN = "owner_id"
SEARCH_INDEX = "message_owner_search"

FORWARD = f"""
-- Dropped first: the owner's backfill would update it for every row.
DROP INDEX IF EXISTS message_search;
ALTER TABLE chat_message ADD COLUMN {OWNER_COLUMN} integer;
UPDATE chat_message AS m SET {OWNER_COLUMN} = c.owner_id
  FROM chat_conversation AS c WHERE c.id = m.conversation_id;
ALTER TABLE chat_message ALTER COLUMN {OWNER_COLUMN} SET NOT NULL;

CREATE FUNCTION chat_message_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.{OWNER_COLUMN} := (SELECT owner_id FROM chat_conversation WHERE id = NEW.conversation_id);
  RETURN NEW;
END $$;
CREATE TRIGGER chat_message_owner BEFORE INSERT OR UPDATE OF conversation_id ON chat_message
  FOR EACH ROW EXECUTE FUNCTION chat_message_owner();

CREATE FUNCTION chat_conversation_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE chat_message SET {OWNER_COLUMN} = NEW.owner_id WHERE conversation_id = NEW.id;
  RETURN NULL;
END $$;
CREATE TRIGGER chat_conversation_owner AFTER UPDATE OF owner_id ON chat_conversation
  FOR EACH ROW WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id)
  EXECUTE FUNCTION chat_conversation_owner();

CREATE INDEX {SEARCH_INDEX} ON chat_message
  USING gin ({OWNER_COLUMN}, to_tsvector('simple'::regconfig, COALESCE(content, ''::text)));
"""

BACKWARD = f"""
DROP INDEX IF EXISTS {SEARCH_INDEX};
CREATE INDEX message_search ON chat_message
  USING gin (to_tsvector('simple'::regconfig, COALESCE(content, ''::text)));
DROP TRIGGER chat_conversation_owner ON chat_conversation;
DROP FUNCTION chat_conversation_owner();
DROP TRIGGER chat_message_owner ON chat_message;
DROP FUNCTION chat_message_owner();
ALTER TABLE chat_message DROP COLUMN {OWNER_COLUMN};
"""


class BtreeGin(BtreeGinExtension):
    """Django's operation asks pg_extension on the way back on every database: SQLite has
    none, and undoing this step there failed."""

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("chat", "0021_approval_app_of")]

    operations = [
        # A GIN index over the owner's number needs btree_gin (a trusted extension: the
        # database's owner may create it). Nothing on SQLite.
        BtreeGin(),
        migrations.RunPython(forward, backward, elidable=False),
    ]
