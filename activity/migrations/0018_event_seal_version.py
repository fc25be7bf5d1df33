from django.db import migrations, models


class Migration(migrations.Migration):
    """Events keep the version of the seal they were written with: those stored before it
    are version 1 (numbers as the string of a float), new ones version 2 (typed)."""

    dependencies = [
        ('activity', '0001_squashed_0017_result_links'),
    ]

    operations = [
        migrations.AddField(
            model_name='activityevent',
            name='seal_version',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AlterField(
            model_name='activityevent',
            name='seal_version',
            field=models.PositiveSmallIntegerField(default=2),
        ),
    ]
