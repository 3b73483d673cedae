from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Connected assistants"

    def ready(self):
        # Support's decision log names a connection's decisions by the connection's name (M3).
        from support import requesters

        from .selectors import requester_names

        requesters.register(requester_names)
