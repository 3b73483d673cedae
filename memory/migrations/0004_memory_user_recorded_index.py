"""An index for `memory.selectors.last_named_key` (SPEC §8: "it" is the user's most recently
named thing), which runs on every turn creation: the user's records newest first, so the
query stops at the first matching key instead of sorting every record of the user.

Added as SQL only (no model state), because this migration belongs to the benchmark work
(bench/) and memory/models.py is edited elsewhere; to move it into
`MemoryRecord.Meta.indexes`, wrap this operation in `SeparateDatabaseAndState`. The SQL is
the same on SQLite and PostgreSQL."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_supersedes_restrict")]

    operations = [
        migrations.RunSQL(
            sql=(
                "CREATE INDEX memory_user_recorded_desc "
                "ON memory_memoryrecord (user_id, recorded_at DESC, version DESC)"
            ),
            reverse_sql="DROP INDEX memory_user_recorded_desc",
        ),
    ]
