"""The dependencies handlers ask for by name (provided once in ``create_app``)."""

from __future__ import annotations

from typing import NamedTuple

from litestar.di import NamedDependency

from service.ledger import Ledger
from service.web.limiting import Gate
from service.web.reads import Reader

__all__ = ["LedgerDep", "ReaderDep", "Services", "ServicesDep"]

ReaderDep = NamedDependency[Reader]
LedgerDep = NamedDependency[Ledger]


class Services(NamedTuple):
    """The ledger, the reader and the rate limits' gate as one dependency (``services``), for
    the hot public posts: litestar resolves several dependencies of one route in a task group
    of their own on every request, which costs more than the rest of the route's framework
    work."""

    ledger: Ledger
    reader: Reader
    gate: Gate


ServicesDep = NamedDependency[Services]
