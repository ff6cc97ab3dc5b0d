"""The REST API of the invocation log (docs/api.md): tool calls, the log, revert, undo, plans."""
