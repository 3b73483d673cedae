"""The domain error hierarchy (DESIGN habit 4). Standard library only, so the pure core can
raise these too. Each error carries a stable `code` and an HTTP status; `config.api` maps them
to RFC 9457 problem details and the pages map them to form errors or messages."""

from __future__ import annotations


class DomainError(Exception):
    code = "error"
    status = 400
    title = "Request failed"

    def __init__(self, detail: str = "", *, errors: dict[str, list[str]] | None = None, **extra):
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.errors = errors
        self.extra = extra


class ValidationError(DomainError):
    """W1 and friends: bad input. `errors` maps field names to messages."""

    code = "validation_error"
    status = 400
    title = "Invalid input"

    def __init__(self, detail: str = "", *, field: str | None = None, errors=None, **extra):
        if errors is None and field is not None:
            errors = {field: [detail or self.title]}
        super().__init__(detail, errors=errors, **extra)


class NotFound(DomainError):
    code = "not_found"
    status = 404
    title = "Not found"


class PermissionDenied(DomainError):
    code = "permission_denied"
    status = 403
    title = "Permission denied"


class Conflict(DomainError):
    code = "conflict"
    status = 409
    title = "Conflict"


class IdempotencyKeyReused(Conflict):
    """W2: the same idempotency key with another payload."""

    code = "idempotency_key_reused"
    title = "Idempotency key reused with another payload"


class AuthorityConflict(Conflict):
    """W6: an explicit `supersedes` would overrule a higher authority."""

    code = "authority_conflict"
    title = "Authority conflict"


class ImportConflict(Conflict):
    code = "import_conflict"
    title = "Import conflict"


class MessageWithheld(Conflict):
    """F7.1: the turn's own message is withheld by a forget, so no plan may hold it. Names the
    turn (`turn`), never the text."""

    code = "message_withheld"
    title = "Message withheld"
    message_id: str | None = None


class PayloadTooLarge(DomainError):
    code = "payload_too_large"
    status = 413
    title = "Payload too large"


class BudgetExceeded(DomainError):
    """I3: the current message alone does not fit in the budget."""

    code = "budget_exceeded"
    status = 422
    title = "Budget exceeded"


class CursorExpired(DomainError):
    """V2: a feed cursor older than the events' retention."""

    code = "cursor_expired"
    status = 410
    title = "Cursor expired"
