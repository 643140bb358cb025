"""HTML pages rendered on the server (Jinja templates): readable with no JavaScript.

``/`` search and sources, ``/runs/{ref}`` the run dossier (docs/runs.md), its history
(``/runs/{ref}/history``) and its report form (``POST /runs/{ref}/reports``), ``/keys/{id}`` a
signing key and what it attested,
``/groups/{key}`` a leaderboard, ``/compare`` runs side by side, ``/log`` the log and how to
audit it. Errors on these routes are HTML pages with the status the JSON API would give (404,
300 with candidates...).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Router
from litestar.exceptions import HTTPException, ValidationException
from litestar.response import Template
from litestar.types import ExceptionHandlersMap

from events.errors import EventError
from keys import KeyringError
from projections.errors import ProjectionError
from service.app.runs import candidates
from service.errors import ServiceError
from service.readmodel.dossier import short_id
from service.web.logs import get_logger
from service.web.pages.browse import compare_page, home_page
from service.web.pages.forms import no_form, report_form
from service.web.pages.groups import group_page
from service.web.pages.keys import key_page, keys_page
from service.web.pages.log import log_page
from service.web.pages.runs import history_page, run_page
from service.web.pages.verify import verify_page
from service.web.problems import http_problem, to_problem

__all__ = ["PAGE_HANDLERS", "error_page"]

_log = get_logger("benchproof.pages")


def error_page(request: Request[Any, Any, Any], exc: Exception) -> Template:
    """Any error on a page route as an HTML page, with the status the JSON API gives it."""
    if isinstance(exc, HTTPException):
        problem = http_problem(exc)
        status, title, detail = exc.status_code, str(problem.title), str(exc.detail)
    else:
        problem = to_problem(exc)
        status, title, detail = problem.status_code, str(problem.title), str(problem.detail)
    if status >= 500 and isinstance(exc, HTTPException):  # ``to_problem`` logs the others
        _log.error("page.failed", path=request.url.path, exc_info=exc)
    context = {
        "status": status,
        "title": title,
        "detail": detail,
        "candidates": [{"shortId": short_id(c), "href": "/runs/" + c} for c in candidates(exc)],
        "as_of": None,
    }
    # The problem's headers (Retry-After of a rate limit, WWW-Authenticate) hold on a page too.
    headers = dict(getattr(problem, "headers", None) or {})
    return Template(
        template_name="error.html", context=context, status_code=status, headers=headers
    )


# ValidationException is named as well: the app maps it to problem+json, and the most specific
# handler wins (a form the page routes could not parse is an HTML page too).
_ERRORS: ExceptionHandlersMap = {
    cls: error_page
    for cls in (
        HTTPException,
        ValidationException,
        ProjectionError,
        ServiceError,
        EventError,
        KeyringError,
        Exception,  # a bug: the error page, and the failure logged with its traceback
    )
}

PAGE_HANDLERS = [
    Router(
        path="/",
        route_handlers=[
            home_page,
            run_page,
            history_page,
            report_form,
            no_form,
            key_page,
            keys_page,
            group_page,
            compare_page,
            log_page,
            verify_page,
        ],
        exception_handlers=_ERRORS,
    )
]
