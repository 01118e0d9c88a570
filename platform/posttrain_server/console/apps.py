from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "posttrain_server.console"
    label = "console"
    verbose_name = "Web console"
