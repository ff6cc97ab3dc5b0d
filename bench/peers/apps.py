from django.apps import AppConfig


class PeersConfig(AppConfig):
    name = "peers"
    default_auto_field = "django.db.models.BigAutoField"
