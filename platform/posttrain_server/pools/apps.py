from django.apps import AppConfig


class PoolsConfig(AppConfig):
    name = "posttrain_server.pools"
    label = "pools"
