"""A conversation counts the messages it loses (conversations.triggers): a process that holds
its history checks that count instead of counting the messages."""

from django.db import migrations, models

from conversations.triggers import MessagesRemovedTrigger


class Migration(migrations.Migration):
    dependencies = [("conversations", "0004_character_catalog_triggers")]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="messages_removed",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        MessagesRemovedTrigger(),
    ]
