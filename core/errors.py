"""Application errors. The API maps each subclass to one HTTP status; services raise them."""

from typing import Any


class AppError(Exception):
    status_code = 400
    default_detail = "Request failed."

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        self.detail = detail or self.default_detail
        self.extra = extra
        super().__init__(self.detail)


class NotFound(AppError):
    """Also raised for things the caller may not know exist: never reveal them with a 403."""

    status_code = 404
    default_detail = "Not found."


class Forbidden(AppError):
    status_code = 403
    default_detail = "You do not have permission to perform this action."


class Conflict(AppError):
    status_code = 409
    default_detail = "Conflict."

    def __init__(self, detail: str | None = None, *, conflicts: list[str] | None = None) -> None:
        super().__init__(detail, conflicts=conflicts or [])
        self.conflicts = conflicts or []


class InvalidInput(AppError):
    status_code = 422
    default_detail = "Invalid input."


class AuditLogFailure(AppError):
    """The write-ahead log could not be written, so nothing ran (fail-closed)."""

    status_code = 503
    default_detail = "Internal audit-log failure. Please retry."
