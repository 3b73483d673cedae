"""The trigger that counts the messages a conversation loses (docs/DESIGN.md, "The history is
caught up"): every statement that deletes messages — a conversation's deletion, an import that
replaces it, raw SQL — counts `Conversation.messages_removed` up for each conversation it
touched, on both databases. A process that holds a conversation's history checks that count
with the conversation's row, which the turn reads anyway, instead of counting the messages it
holds. Imports nothing of the project but `config.catalog`: migrations use it."""

from __future__ import annotations

from config.catalog import SQLOperation

MESSAGES = "conversations_message"
CONVERSATIONS = "conversations_conversation"


class MessagesRemovedTrigger(SQLOperation):
    """PostgreSQL: one statement-level trigger (the deleted rows as a transition table, one
    UPDATE per statement); SQLite: one row-level trigger."""

    def create_sql(self, vendor: str) -> list[str]:
        if vendor == "postgresql":
            return [
                "CREATE OR REPLACE FUNCTION conversations_messages_removed() RETURNS trigger "
                "LANGUAGE plpgsql AS $$ BEGIN "
                f"UPDATE {CONVERSATIONS} SET messages_removed = messages_removed + 1 "
                "WHERE id IN (SELECT DISTINCT conversation_id FROM gone); "
                "RETURN NULL; END $$",
                f"CREATE TRIGGER conversations_messages_removed AFTER DELETE ON {MESSAGES} "
                "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
                "EXECUTE FUNCTION conversations_messages_removed()",
            ]
        return [
            f"CREATE TRIGGER conversations_messages_removed AFTER DELETE ON {MESSAGES} "
            f"BEGIN UPDATE {CONVERSATIONS} SET messages_removed = messages_removed + 1 "
            "WHERE id = OLD.conversation_id; END"
        ]

    def drop_sql(self, vendor: str) -> list[str]:
        if vendor == "postgresql":
            return [
                f"DROP TRIGGER IF EXISTS conversations_messages_removed ON {MESSAGES}",
                "DROP FUNCTION IF EXISTS conversations_messages_removed()",
            ]
        return ["DROP TRIGGER IF EXISTS conversations_messages_removed"]
