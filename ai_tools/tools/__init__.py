"""The tools, one topic a module; `ai_tools.registry.discover` imports every module here."""
