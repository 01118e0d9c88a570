from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "posttrain_server.jobs"
    label = "jobs"
