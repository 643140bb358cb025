"""Verify: check a whole log from its bytes, read-only (``verifier.log``)."""

from __future__ import annotations

from pathlib import Path

from events.errors import LogError
from events.stores import open_reader
from events.stores.faults import StorageFault
from service.core.config import DataDir
from service.errors import NotFound
from verifier.log import Finding, VerifyReport, verify_log

__all__ = ["verify"]


def verify(root: Path) -> VerifyReport:
    """Verify the log of the data directory ``root``: every signature against the key valid at
    its position, the tree, every checkpoint.

    Raises:
        NotFound: ``root`` holds no log.
    """
    data = DataDir(root)
    if not data.exists():
        raise NotFound(f"no log in {root} (run `benchproof init --data {root}`)")
    if data.on_sqlite:
        return verify_log(data.db)
    try:
        log = open_reader(data.store)
    except LogError as exc:
        if isinstance(exc, StorageFault):
            raise
        return VerifyReport(findings=[Finding(0, exc.detail)])
    try:
        return verify_log(log)
    finally:
        log.close()
