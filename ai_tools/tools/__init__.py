"""The built-in tools, one topic a module; importing a module registers its tools."""

from ai_tools.tools import combat, creatures, party, read, story  # noqa: F401
