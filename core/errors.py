"""Application errors. The API maps each subclass to one HTTP status; services raise them.

A subclass states its status and default message in its class line:
`class Gone(AppError, status=410, detail="It is gone."): ...`.
"""

from typing import Any


class AppError(Exception):
    status_code = 400
    default_detail = "Request failed."

    def __init_subclass__(cls, *, status: int, detail: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.status_code, cls.default_detail = status, detail

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        self.detail = detail or self.default_detail
        self.extra = extra
        super().__init__(self.detail)


class NotFound(AppError, status=404, detail="Not found."):
    """Also raised for things the caller may not know exist: never reveal them with a 403."""


class Forbidden(AppError, status=403, detail="You do not have permission to perform this action."):
    """A member without the right; `extra` carries what the security log records."""


class CallRefused(Forbidden, status=403, detail="This tool call was refused."):
    """A tool call least privilege refused, already on record: `invocation` is its failed log
    row, and the dispatch wrote its security event in the same transaction (so no surface
    records it again)."""

    def __init__(self, detail: str, *, invocation: Any) -> None:
        super().__init__(detail, recorded=True)
        self.invocation = invocation


class Conflict(AppError, status=409, detail="Conflict."):
    """Later work is in the way; `conflicts` names it (the invocations' ids)."""

    def __init__(self, detail: str | None = None, *, conflicts: list[str] | None = None) -> None:
        super().__init__(detail, conflicts=conflicts or [])
        self.conflicts = conflicts or []


class StalePreview(Conflict, status=409, detail="The preview is stale."):
    """A held tool call's preview no longer matches the world; `preview` is the fresh one."""

    def __init__(self, detail: str, *, preview: dict[str, Any]) -> None:
        super().__init__(detail)
        self.preview = preview


class Diverged(Conflict, status=409, detail="The world has changed since."):
    """What an undone turn wrote has changed since it was undone, so it cannot be put back
    exactly; `changes` says what: `{entity, id, field, was, now}`."""

    def __init__(self, detail: str, *, changes: list[dict[str, Any]]) -> None:
        super().__init__(detail)
        self.changes = changes


class Gone(AppError, status=410, detail="It is gone."):
    """It existed and can no longer be used (an expired, revoked or used-up invite link)."""


class InvalidInput(AppError, status=422, detail="Invalid input."):
    """Input the schema let through but the world refuses (hp above max_hp, a stranger's PC)."""


class AuditLogFailure(AppError, status=503, detail="Internal audit-log failure. Please retry."):
    """The write-ahead log could not be written, so nothing ran (fail-closed)."""
