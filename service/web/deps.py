"""The dependencies handlers ask for by name (provided once in ``create_app``)."""

from __future__ import annotations

from litestar.di import NamedDependency

from service.ledger import Ledger
from service.web.reads import Reader

__all__ = ["LedgerDep", "ReaderDep"]

ReaderDep = NamedDependency[Reader]
LedgerDep = NamedDependency[Ledger]
