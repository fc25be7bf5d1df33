"""The MCP models' content types move from chat's label to this app's, so that the
permissions staff were given (`chat.change_mcpserver` becomes `servers.change_mcpserver`)
and the admin's history of these rows stay theirs. A database that `migrate` already gave
this app's content types (post_migrate, after an earlier run) has them merged into the old
ones: whoever held either permission holds the one that is kept."""

from django.db import migrations

MODELS = [
    "mcpserver", "mcpserverchange", "mcpgrant", "mcpconsent", "mcpgrantrecord",
    "mcpserversighting",
]  # fmt: skip


def relabel(apps, schema_editor, old_label, new_label):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    LogEntry = apps.get_model("admin", "LogEntry")
    db = schema_editor.connection.alias
    types = ContentType.objects.using(db)
    for model in MODELS:
        old = types.filter(app_label=old_label, model=model).first()
        if old is None:
            continue  # a new database: post_migrate makes them, under the new label
        new = types.filter(app_label=new_label, model=model).first()
        if new is not None:
            for permission in Permission.objects.using(db).filter(content_type=new):
                kept = Permission.objects.using(db).filter(
                    content_type=old, codename=permission.codename
                ).first()
                if kept is None:
                    permission.content_type = old
                    permission.save(update_fields=["content_type"])
                    continue
                kept.user_set.add(*permission.user_set.all())
                kept.group_set.add(*permission.group_set.all())
                permission.delete()
            LogEntry.objects.using(db).filter(content_type=new).update(content_type=old)
            new.delete()
        old.app_label = new_label
        old.save(update_fields=["app_label"])


def forwards(apps, schema_editor):
    relabel(apps, schema_editor, "chat", "servers")


def backwards(apps, schema_editor):
    relabel(apps, schema_editor, "servers", "chat")


class Migration(migrations.Migration):
    # After chat forgets the models: undoing chat's step undoes this one first.
    dependencies = [
        ("servers", "0001_initial"),
        ("chat", "0016_mcp_models_move_to_servers"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("admin", "0003_logentry_add_action_flag_choices"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
