"""The domain error hierarchy (DESIGN habit 4). Standard library only, so the pure core can
raise these too. Each error names a stable `code`; its HTTP status and title are that code's
in the one list of problems (`config.problem_codes`, SPEC §10 C3), set on the class. `config.api`
maps them to RFC 9457 problem details and the pages map them to form errors or messages."""

from __future__ import annotations

from config.problem_codes import PROBLEM_CODES


class DomainError(Exception):
    code = "error"
    status = 400
    title = "Request failed"

    def __init_subclass__(cls, **kwargs):
        """C3: a subclass answers with its code's status and title from the list; a code the
        API never answers (the admin's own refusals) keeps its parent's."""
        super().__init_subclass__(**kwargs)
        listed = PROBLEM_CODES.get(cls.code)
        if listed is not None:
            cls.status, cls.title = listed.status, listed.title

    def __init__(self, detail: str = "", *, errors: dict[str, list[str]] | None = None, **extra):
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.errors = errors
        self.extra = extra


class ValidationError(DomainError):
    """W1 and friends: bad input. `errors` maps field names to messages."""

    code = "validation_error"

    def __init__(self, detail: str = "", *, field: str | None = None, errors=None, **extra):
        if errors is None and field is not None:
            errors = {field: [detail or self.title]}
        super().__init__(detail, errors=errors, **extra)


class NotFound(DomainError):
    code = "not_found"


class PermissionDenied(DomainError):
    code = "permission_denied"


class Conflict(DomainError):
    code = "conflict"


class IdempotencyKeyReused(Conflict):
    """W2: the same idempotency key with another payload."""

    code = "idempotency_key_reused"


class AuthorityConflict(Conflict):
    """W6: an explicit `supersedes` would overrule a higher authority."""

    code = "authority_conflict"


class ImportConflict(Conflict):
    code = "import_conflict"


class MessageWithheld(Conflict):
    """F7.1: the turn's own message is withheld by a forget, so no plan may hold it. Names the
    turn (`turn`), never the text."""

    code = "message_withheld"
    message_id: str | None = None


class PayloadTooLarge(DomainError):
    code = "payload_too_large"


class BudgetExceeded(DomainError):
    """I3: the current message alone does not fit in the budget."""

    code = "budget_exceeded"


class CursorExpired(DomainError):
    """V2: a feed cursor older than the events' retention."""

    code = "cursor_expired"
