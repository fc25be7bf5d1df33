"""The MCP models are the servers app's now (chat.servers, its migration 0001): chat forgets
them, state only; their tables stay as they are, with their rows."""

from django.db import migrations

MOVED = [
    "McpServer", "McpServerChange", "McpGrant", "McpConsent", "McpGrantRecord",
    "McpServerSighting",
]  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0015_tool_approval_title"),
        ("servers", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[migrations.DeleteModel(name=name) for name in MOVED],
        ),
    ]
