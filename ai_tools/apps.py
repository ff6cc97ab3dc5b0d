from django.apps import AppConfig


class AiToolsConfig(AppConfig):
    name = "ai_tools"
    verbose_name = "AI tools"

    def ready(self) -> None:
        import ai_tools.checks  # noqa: F401
        from ai_tools.registry import discover

        discover()
