"""The support logs moved to the `support` app: their tables are renamed to that app's names
here, and `support.0001` takes the models over in Django's state (the rows stay)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("config", "0003_support_group"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable("PrivateTextAccess", "support_privatetextaccess"),
                migrations.AlterModelTable("SupportAction", "support_supportaction"),
            ],
            state_operations=[
                migrations.DeleteModel("PrivateTextAccess"),
                migrations.DeleteModel("SupportAction"),
            ],
        ),
    ]
