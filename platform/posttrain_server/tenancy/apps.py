from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "posttrain_server.tenancy"
    label = "tenancy"
