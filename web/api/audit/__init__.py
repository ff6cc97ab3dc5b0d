"""The REST API of the invocation log (SPEC §5, §6): tool calls, the log, revert, undo, plans."""
