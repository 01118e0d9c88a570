from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "posttrain_server.files"
    label = "files"
