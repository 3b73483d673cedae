"""Empty. It created the "Support" group before the support staff's domain had an app of its
own; `support.0002_support_group` does that now (idempotently). Kept so that databases which
applied it stay consistent."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("config", "0002_support_logs")]
    operations = []
