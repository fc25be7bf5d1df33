import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    """A feed's closing (its head, row, model calls and answer text, hashed when it ends) and
    the ledger of all feeds' closings."""

    dependencies = [
        ('activity', '0018_event_seal_version'),
    ]

    operations = [
        migrations.AddField(
            model_name='activityfeed',
            name='answer_sha256',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AddField(
            model_name='activityfeed',
            name='closing',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.CreateModel(
            name='LedgerEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('feed_id', models.PositiveBigIntegerField(db_index=True)),
                ('sealed', models.CharField(max_length=64)),
                ('previous', models.CharField(max_length=64, unique=True)),
                ('entry', models.CharField(max_length=64)),
                ('at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
            ],
            options={
                'verbose_name_plural': 'ledger entries',
                'ordering': ['id'],
            },
        ),
    ]
