"""The game master: providers that narrate and call the tools, and the runner of a turn.

`gm.services.turn_submit(...)` queues a turn; workers run it (`gm.tasks`, `gm.runner`).
Providers (`scripted`, `anthropic`) only see a `Session`: their words stream through it and
their tool calls go through the audited dispatch, so no provider can change the world without
the log and the undo.
"""
