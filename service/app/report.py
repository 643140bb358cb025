"""Reports: anybody may report a problem with a run (anonymously). The index signs and appends
``report.filed.v1``; a run with an unresolved report is "under review" (its dossier says so).
A report never changes the run's evidence level (docs/evidence.md)."""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from events.strictjson import check_strict_json
from events.types import ReportFiled
from projections import queries
from service.core.ledger import pending_of
from service.core.logs import OpenedLog
from service.errors import UsageError

__all__ = ["MAX_TEXT_BYTES", "REASONS", "Filed", "InvalidReport", "Reason", "file_report"]

Reason = Literal[
    "incorrect-result",
    "suspected-reward-hack",
    "weak-correctness-check",
    "wrong-hardware-or-environment",
    "duplicate",
    "license",
    "other",
]
REASONS: tuple[str, ...] = get_args(Reason)
MAX_TEXT_BYTES = 4096


class InvalidReport(UsageError):
    """The report is not ``{"reason", "text"}`` with a known reason and a short enough text."""


class _Report(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    reason: Reason
    text: str


_REPORT = msgspec.json.Decoder(_Report)


class Filed(msgspec.Struct, frozen=True):
    """A report in the log: its id (the entry's payload digest) and position."""

    id: str
    index: int


def file_report(ledger: OpenedLog, ref: str, body: bytes) -> tuple[Filed, bool]:
    """File the report ``body`` (JSON ``{"reason", "text"}``) on the run ``ref`` names; return
    it and whether this call appended it (the same report again is the entry already held).

    Raises:
        InvalidReport: malformed body, unknown reason, text over ``MAX_TEXT_BYTES``.
        UnknownRun, AmbiguousRun: ``ref``.
    """
    try:
        check_strict_json(body)
        report = _REPORT.decode(body)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InvalidReport(f"a report is {{reason, text}}: {exc}", reasons=list(REASONS)) from None
    if len(report.text.encode()) > MAX_TEXT_BYTES:
        raise InvalidReport(f"text is over {MAX_TEXT_BYTES} bytes of UTF-8", field="text")
    if not report.text.strip():
        raise InvalidReport("text is empty: say what is wrong with the run", field="text")
    with ledger.store.snapshot() as conn:
        digest = queries.resolve_run(conn, ref)
    event = ReportFiled(runDigest=digest, category=report.reason, text=report.text)
    appended = ledger.writer().append_pending([pending_of(event, digest)])[0]
    return Filed(appended.payloadDigest, appended.seq), appended.new
