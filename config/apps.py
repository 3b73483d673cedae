from django.apps import AppConfig


class ConfigConfig(AppConfig):
    name = "config"
    verbose_name = "API access and support"
