"""Ingest: import what a source publishes into the signed log, in one transaction.

``ingest`` is what ``benchproof ingest`` does with files and folders; ``ingest_upload`` what
``POST /v1/ingest/{source}`` does with one uploaded file. Both read and check everything first
(``service.ingest.api.plan_import``): invalid rows refuse the whole import unless skipped, and
what the log already holds is not appended again.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from events.errors import EventError
from service.errors import ServiceError, UsageError
from service.ingest.api import commit_plan, plan_import
from service.ingest.core import IngestResult, Rejected
from service.ledger import Ledger

__all__ = ["Ingested", "ingest", "ingest_upload"]


class Ingested(NamedTuple):
    """What an import appended, and the rows it skipped (with their reasons)."""

    result: IngestResult
    rejected: list[Rejected]


def ingest(
    ledger: Ledger,
    source: str,
    paths: Sequence[Path],
    *,
    skip_invalid: bool = False,
    rejected_file: Path | None = None,
    progress: Callable[[int], None] | None = None,
    expect: Callable[[int], None] | None = None,
) -> Ingested:
    """Import the files (or folders) ``paths`` of ``source``. With ``skip_invalid``, the valid
    rows are imported and the rejected ones written with reasons to ``rejected_file`` (if given),
    which appears only if the import commits. ``expect`` and ``progress`` as ``commit``.

    Raises:
        InvalidInput: rows were invalid and ``skip_invalid`` is false (nothing was appended).
        UsageError: an unknown source, or ``rejected_file`` cannot be written (nothing was
            appended).
        InvalidManifest / NotFound / EventError: as the importer raises them.
    """
    plan = plan_import(source, paths, skip_invalid=skip_invalid)
    partial = None
    if plan.rejected and rejected_file is not None:
        partial = _write_partial(rejected_file, plan.rejected)
    try:
        result = commit_plan(ledger, plan, progress=progress, expect=expect)
    except BaseException:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise
    if partial is not None and rejected_file is not None:
        os.replace(partial, rejected_file)
    return Ingested(result, plan.rejected)


def _write_partial(path: Path, rejected: list[Rejected]) -> Path:
    """The rejected rows, written beside ``path`` before anything is appended; moved into place
    once the import has committed, so either both happen or neither.

    Raises:
        UsageError: the file cannot be written (nothing has been appended).
    """
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as fh:
            for r in rejected:
                fh.write(msgspec.json.encode(r) + b"\n")
    except OSError as exc:
        raise UsageError(
            f"cannot write the rejected rows to {path}: {exc.strerror}; nothing was appended"
        ) from None
    return partial


def ingest_upload(ledger: Ledger, source: str, body: bytes, name: str) -> IngestResult:
    """Import one uploaded file of ``source``: ``body`` under the file name ``name`` (whose
    suffix picks the format). Invalid rows refuse it whole.

    Raises:
        UsageError: ``name`` names no file (empty, ``.`` or ``..``).
        As ``ingest``; their messages name the upload by ``name``, never the server's
        temporary folder.
    """
    base = Path(name).name
    if base in ("", ".", ".."):
        raise UsageError(f"the upload's file name {name!r} names no file (e.g. runs.json)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / base
        path.write_bytes(body)
        try:
            return ingest(ledger, source, [path]).result
        except (ServiceError, EventError) as exc:
            _hide(exc, str(Path(tmp)) + "/")
            raise


def _hide(exc: ServiceError | EventError, folder: str) -> None:
    """Remove ``folder`` from the messages of ``exc`` (they name the file they read)."""
    exc.detail = exc.detail.replace(folder, "")
    exc.args = tuple(a.replace(folder, "") if isinstance(a, str) else a for a in exc.args)
    report = exc.details.get("report")
    if isinstance(report, list):
        exc.details["report"] = [str(r).replace(folder, "") for r in report]
