from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"

    def ready(self):
        # The writers of users and conversations (conversations, below) reach memory's part:
        # a user's profile when it is created, and what points into a conversation's or a
        # user's rows before they are deleted (SPEC §7, §9).
        from conversations import dependents

        from .deletion import conversation_memory_delete, user_memory_unlink
        from .services import ensure_profile

        dependents.register("user_put", ensure_profile)
        dependents.register("user_delete", user_memory_unlink)
        dependents.register("conversation_delete", conversation_memory_delete)
