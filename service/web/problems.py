"""RFC 9457 problem details, in one place: every error the app raises is answered here, with
the problem type, title and status of ``service.web.problem_types``. 5xx answers carry a
generic detail only (RFC 9457's security considerations) and are logged with their traceback.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar.exceptions import HTTPException, ValidationException
from litestar.plugins.problem_details import (
    ProblemDetailsConfig,
    ProblemDetailsException,
    ProblemDetailsPlugin,
)

from events.errors import EventError, LogCorrupted
from events.stores.faults import (
    StatementFailed,
    StorageBusy,
    StorageDamaged,
    StorageFault,
    storage_fault,
)
from keys import KeyringError
from projections.errors import ProjectionError
from service.errors import ServiceError
from service.shared.limits import RateLimited
from service.web.logs import get_logger
from service.web.problem_types import (
    BAD_REQUEST,
    BASE,
    FALLBACK,
    PROBLEMS,
    TooLarge,
    Unauthorized,
)
from verifier.errors import VerifierError

__all__ = ["BASE", "TooLarge", "Unauthorized", "plugin", "to_problem"]


_log = get_logger("benchproof.http")


def _jsonable(value: object) -> Any:
    return msgspec.to_builtins(value, str_keys=True)


def to_problem(exc: Exception) -> ProblemDetailsException:
    """The problem details of a domain error (looked up along its class hierarchy). A 5xx is
    logged with its traceback (the answer only names the request id): a fault of the storage
    as a warning with its detail, which names the file; anything else as an error."""
    spec = next((PROBLEMS[c] for c in type(exc).__mro__ if c in PROBLEMS), FALLBACK)
    if spec.status >= 500:
        if isinstance(exc, LogCorrupted | StorageFault):
            _log.warning("request.storage_fault", detail=getattr(exc, "detail", str(exc)))
        else:
            _log.error("request.failed", exc_info=exc)
    detail = getattr(exc, "detail", str(exc))
    details = getattr(exc, "details", {})
    headers = {"WWW-Authenticate": 'Bearer realm="benchproof"'} if spec.status == 401 else None
    if isinstance(exc, RateLimited):
        headers = {"Retry-After": str(max(1, int(details["retry_after"])))}
    if isinstance(exc, LogCorrupted | StorageFault):
        # Said to anyone, so without the server's paths; nothing of the request was recorded.
        public = exc.public if isinstance(exc, StorageFault) else StorageDamaged.public
        return ProblemDetailsException(
            type_=spec.type_uri,
            title=spec.title,
            status_code=spec.status,
            detail=public,
            headers={"Retry-After": "1" if isinstance(exc, StorageBusy) else "30"},
        )
    if spec.status >= 500:
        return ProblemDetailsException(
            type_=spec.type_uri,
            title=spec.title,
            status_code=spec.status,
            detail="Internal error; see the server log for the request id.",
        )
    return ProblemDetailsException(
        type_=spec.type_uri,
        title=spec.title,
        status_code=spec.status,
        detail=detail,
        extra=_jsonable(details) if details else None,
        headers=headers,
    )


def invalid_request(exc: ValidationException) -> ProblemDetailsException:
    """A request that failed litestar's own validation (parameters, body shape): the same
    problem type as every other malformed request."""
    return ProblemDetailsException(
        type_=BAD_REQUEST.type_uri,
        title=BAD_REQUEST.title,
        status_code=BAD_REQUEST.status,
        detail=exc.detail,
        extra={"errors": _jsonable(exc.extra)} if exc.extra else None,
    )


def http_problem(exc: HTTPException) -> ProblemDetailsException:
    """Litestar's own HTTP errors (404 for an unknown path, 405, 413...) as problem details."""
    titles = {404: "Not found", 405: "Method not allowed", 413: "The request body is too large"}
    return ProblemDetailsException(
        type_=f"{BASE}/http-{exc.status_code}",
        title=titles.get(exc.status_code, "HTTP error"),
        status_code=exc.status_code,
        detail=exc.detail,
        headers=exc.headers,
    )


def storage_problem(exc: Exception) -> ProblemDetailsException:
    """A file-system error, or a statement the database refused for no fault of the storage
    (``StatementFailed``: a bug), that escaped: the storage fault it is (full, read-only,
    damaged), else a plain 500 problem. The stores' sessions say their drivers' faults as
    ``StorageFault``s themselves."""
    fault = storage_fault(exc, None)
    return to_problem(fault if fault is not None else exc)


def plugin() -> ProblemDetailsPlugin:
    roots: tuple[type[Exception], ...] = (
        EventError,
        KeyringError,
        ProjectionError,
        ServiceError,
        VerifierError,
    )
    mapping: dict[type[Exception], Any] = {root: to_problem for root in roots}
    mapping[StatementFailed] = storage_problem
    mapping[OSError] = storage_problem
    mapping[ValidationException] = invalid_request
    return ProblemDetailsPlugin(
        ProblemDetailsConfig(
            # Litestar's own HTTP errors (routing 404, 405, 413...) go through ``http_problem``
            # (the app's handler, which also answers page paths with an HTML page).
            enable_for_all_http_exceptions=False,
            exception_to_problem_detail_map=mapping,
        )
    )
