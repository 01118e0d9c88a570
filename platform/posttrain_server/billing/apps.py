from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "posttrain_server.billing"
    label = "billing"
