"""The MCP models as this app's, over the tables chat's migrations made (0001, 0008, 0010,
0012, 0013): state only, no table is touched, so an existing database keeps its rows and a
new one gets its tables from chat's migrations, which run first."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("chat", "0015_tool_approval_title"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='McpServer',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(help_text="Letters, digits, '-' and '_'. The agent sees its tools as <name>__<tool>.", max_length=24, unique=True)),
                        ('transport', models.CharField(choices=[('http', 'Streamable HTTP'), ('stdio', 'stdio (a command on this machine)')], default='http', max_length=8)),
                        ('url', models.URLField(blank=True, help_text="For streamable HTTP: the server's MCP URL.")),
                        ('headers', models.JSONField(blank=True, default=dict)),
                        ('command', models.CharField(blank=True, help_text='For stdio: the program.', max_length=400)),
                        ('args', models.JSONField(blank=True, default=list)),
                        ('env', models.JSONField(blank=True, default=dict)),
                        ('enabled', models.BooleanField(default=True)),
                        ('tools', models.JSONField(blank=True, null=True)),
                        ('approval', models.JSONField(blank=True, null=True)),
                        ('client_credentials', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        'verbose_name': 'MCP server',
                        'db_table': 'chat_mcpserver',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='McpGrantRecord',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('at', models.DateTimeField(auto_now_add=True, db_index=True)),
                        ('server', models.CharField(max_length=24)),
                        ('action', models.CharField(choices=[('granted', 'Granted'), ('refreshed', 'Refreshed'), ('refused', 'Refused'), ('disconnected', 'Disconnected')], max_length=12)),
                        ('scopes', models.CharField(blank=True, max_length=1000)),
                        ('detail', models.CharField(blank=True, max_length=200)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'verbose_name': 'MCP grant record',
                        'db_table': 'chat_mcpgrantrecord',
                        'ordering': ['-at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='McpServerChange',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('at', models.DateTimeField(auto_now_add=True, db_index=True)),
                        ('server', models.CharField(help_text="The server's name at the time.", max_length=24)),
                        ('action', models.CharField(choices=[('added', 'Added'), ('changed', 'Changed'), ('enabled', 'Enabled'), ('disabled', 'Disabled'), ('deleted', 'Deleted')], max_length=8)),
                        ('fields', models.JSONField(blank=True, default=list)),
                        ('declaration', models.JSONField(default=dict)),
                        ('by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'verbose_name': 'MCP server change',
                        'db_table': 'chat_mcpserverchange',
                        'ordering': ['-at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='McpServerSighting',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('worker', models.CharField(help_text='host:pid of the server process.', max_length=100)),
                        ('server', models.CharField(max_length=24)),
                        ('state', models.CharField(max_length=12)),
                        ('reason', models.CharField(blank=True, max_length=300)),
                        ('since', models.DateTimeField(blank=True, null=True)),
                        ('sessions', models.PositiveIntegerField(default=0)),
                        ('tools', models.JSONField(blank=True, null=True)),
                        ('listed_under', models.CharField(blank=True, max_length=64)),
                        ('started_at', models.DateTimeField()),
                        ('updated_at', models.DateTimeField(db_index=True)),
                    ],
                    options={
                        'verbose_name': 'MCP server sighting',
                        'db_table': 'chat_mcpserversighting',
                        'ordering': ['server', 'worker'],
                        'constraints': [models.UniqueConstraint(fields=('worker', 'server'), name='one_sighting_per_worker')],
                    },
                ),
                migrations.CreateModel(
                    name='McpConsent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('server', models.CharField(max_length=24)),
                        ('state_hash', models.CharField(max_length=64, unique=True)),
                        ('authorization_url', models.TextField()),
                        ('scopes', models.CharField(blank=True, max_length=1000)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('deadline', models.DateTimeField()),
                        ('answered_at', models.DateTimeField(blank=True, null=True)),
                        ('code', models.TextField(blank=True, editable=False)),
                        ('iss', models.CharField(blank=True, max_length=500)),
                        ('error', models.CharField(blank=True, max_length=100)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'chat_mcpconsent',
                        'indexes': [models.Index(fields=['user', 'server', '-created_at'], name='chat_mcpcon_user_id_2774da_idx')],
                    },
                ),
                migrations.CreateModel(
                    name='McpGrant',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('server', models.CharField(max_length=24)),
                        ('tokens', models.TextField(blank=True, editable=False)),
                        ('client', models.TextField(blank=True, editable=False)),
                        ('scopes', models.CharField(blank=True, max_length=1000)),
                        ('connected_at', models.DateTimeField(blank=True, null=True)),
                        ('refreshed_at', models.DateTimeField(blank=True, null=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='mcp_grants', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'chat_mcpgrant',
                        'ordering': ['server'],
                        'constraints': [models.UniqueConstraint(fields=('user', 'server'), name='one_grant_per_user_server')],
                    },
                ),
            ],
        ),
    ]
