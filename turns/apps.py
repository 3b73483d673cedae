from django.apps import AppConfig


class TurnsConfig(AppConfig):
    """The turn orchestration (docs/DESIGN.md): the top of the apps' DAG. No models of its own:
    it reads and writes through the services and selectors of the apps below it."""

    name = "turns"
