"""The guard of the operator's routes: a request goes on only with a valid operator token.

Kept apart from ``service.web.auth`` (the token store), which the CLI imports without litestar.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import post
from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation

from service.web.auth import TokenStore
from service.web.params import OPERATOR_TOKEN
from service.web.problems import Unauthorized

__all__ = ["bearer_token", "operator_only", "operator_post"]


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value, if it is one."""
    return authorization[7:].strip() if authorization.lower().startswith("bearer ") else None


def operator_only(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """A litestar guard: let the request go on only with a valid operator token, checked
    against the app's ``state.tokens`` (a ``TokenStore``) before the body is read.

    Raises:
        Unauthorized: no token, or not a valid one (401 with ``WWW-Authenticate: Bearer``).
    """
    tokens: TokenStore = connection.app.state.tokens
    if tokens.check(bearer_token(connection.headers.get("authorization", ""))) is None:
        raise Unauthorized("a valid operator token is required (Authorization: Bearer <token>)")


def operator_post(
    path: str,
    responses: Mapping[int, ResponseSpec],
    *,
    status_code: int = 201,
    operation_class: type[Operation] = Operation,
) -> post:
    """A POST route for operators only: the token guard, the ``operator`` tag, the OpenAPI
    security scheme and its 401 answer, beside the route's own ``responses`` (and its
    ``operation_class``: ``service.web.docs.documented``)."""
    return post(
        path,
        tags=["operator"],
        guards=[operator_only],
        sync_to_thread=True,
        status_code=status_code,
        security=[{"operatorToken": []}],
        responses={**responses, **OPERATOR_TOKEN},
        operation_class=operation_class,
    )
