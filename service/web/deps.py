"""The dependencies handlers ask for by name (provided once in ``create_app``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from litestar import Request
from litestar.di import NamedDependency

from service.core.logs import OpenedLog
from service.web.limiting import Gate
from service.web.reads import Reader

__all__ = ["LedgerDep", "ReaderDep", "Services", "ServicesDep"]

ReaderDep = NamedDependency[Reader]
LedgerDep = NamedDependency[OpenedLog]


class Services(NamedTuple):
    """The ledger, the reader and the rate limits' gate as one dependency (``services``), for
    the hot public posts: litestar resolves several dependencies of one route in a task group
    of their own on every request, which costs more than the rest of the route's framework
    work."""

    ledger: OpenedLog
    reader: Reader
    gate: Gate
    public_url: str = ""  # the address permalinks name ("": the one the request came to)

    def base(self, request: Request[Any, Any, Any]) -> str:
        """The base of permalinks: the configured public URL, else the request's own."""
        return (self.public_url or str(request.base_url)).rstrip("/")


ServicesDep = NamedDependency[Services]
