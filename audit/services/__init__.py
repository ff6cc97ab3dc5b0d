"""Writes of the audit app: the audited dispatch, revert and undo, and their plans."""

from audit.services.dispatch import invocation_dispatch
from audit.services.revert import (
    RevertResult,
    UndoResult,
    invocation_revert,
    invocation_revert_plan,
    turn_undo,
    turn_undo_plan,
)
from audit.services.rewind import RewindResult, turn_rewind, turn_rewind_plan

__all__ = [
    "RevertResult",
    "RewindResult",
    "UndoResult",
    "invocation_dispatch",
    "invocation_revert",
    "invocation_revert_plan",
    "turn_undo",
    "turn_rewind",
    "turn_rewind_plan",
    "turn_undo_plan",
]
