"""Ingest: import what a source publishes into the signed log, in one transaction.

``ingest`` is what ``benchproof ingest`` does with files and folders; ``ingest_upload`` what
``POST /v1/ingest/{source}`` does with one uploaded file. Both read and check everything first
(``service.ingest.api.plan_import``): invalid rows refuse the whole import unless skipped.
``commit_plan`` then resolves the plan against what the log holds (``service.ingest.resolve``,
through ``LogHoldings``) and appends what is new, in one transaction: what the log already
holds is not appended again.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from events.bulk import paused_gc
from events.errors import EventError, InvalidManifest
from events.port import Session
from events.yamlcore import load_yaml
from projections import queries
from service.core.logs import OpenedLog
from service.errors import InvalidInput, ServiceError, UsageError
from service.ingest.api import plan_import
from service.ingest.core import IngestResult, Plan, Rejected
from service.ingest.resolve import resolve

__all__ = ["Ingested", "LogHoldings", "commit_plan", "ingest", "ingest_upload", "upload_name"]


class Ingested(NamedTuple):
    """What an import appended, and the rows it skipped (with their reasons)."""

    result: IngestResult
    rejected: list[Rejected]


def ingest(
    ledger: OpenedLog,
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
        MirrorReadOnly: ``ledger`` is a mirror, and the import brings something new.
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


class LogHoldings:
    """What the log holds, as an importer asks it (``service.ingest.resolve.Holdings``): the
    projections, read on ``session`` (the import's transaction)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def manifest(self, digest: str) -> dict[str, Any] | None:
        return queries.manifest(self._session, digest)

    def manifests(self, digests: Sequence[str]) -> set[str]:
        return queries.known_manifests(self._session, list(digests))

    def runs(self, digests: Sequence[str]) -> set[str]:
        return queries.run_exists(self._session, list(digests))

    def latest_of_rows(self, row_keys: Sequence[str]) -> dict[str, str]:
        return queries.latest_for_rows(self._session, list(row_keys))

    def sources(self) -> set[str]:
        return queries.registered_sources(self._session)


def commit_plan(
    ledger: OpenedLog,
    plan: Plan,
    *,
    progress: Callable[[int], None] | None = None,
    expect: Callable[[int], None] | None = None,
) -> IngestResult:
    """Resolve a checked plan against what the log holds and append what is new, in one
    transaction (a re-run appends nothing for what is already there). ``expect`` hears how
    many entries are about to be written, then ``progress`` of each chunk written.

    Raises:
        MirrorReadOnly: ``ledger`` is a mirror, and the plan brings something new.
    """
    # What the log holds is read, and the new entries appended, in one transaction with the
    # writers' lock held throughout: two imports of one run at once append it once (the second
    # reads the first's entries), and no read shares the writer's connection with another
    # thread's commit.
    with paused_gc(), ledger.store.transaction():
        events, result = resolve(plan, LogHoldings(ledger.store.session))
        # One transaction for the whole import: it lands whole or not at all (the store still
        # signs and writes it in chunks, overlapping the two). ``progress`` given: the append
        # nests in this transaction rather than waiting for the group commit's turn, which
        # this transaction holds.
        if expect is not None:
            expect(len(events))
        # Encoded, signed and written a slice at a time: the payloads, envelopes and entries of
        # only one slice are held at once, never the whole import's.
        # Every slice is recorded at one instant, the import's: a time cut (``asOf``, a
        # citation's day) never falls inside an import.
        if events:
            writer, now = ledger.writer(), ledger.clock()
            for start in range(0, len(events), APPEND_SLICE):
                chunk = events[start : start + APPEND_SLICE]
                appended = writer.append(chunk, progress=progress or _ignore, now=now)
                result.entries += sum(a.new for a in appended)
        result.size = ledger.store.size
        return result


APPEND_SLICE = 4096
"""Events encoded and appended at a time within an import's one transaction (four of the
store's chunks, so that signing still runs ahead of the writes)."""


def _ignore(_: int) -> None:
    pass


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


# A media type's subtype that says an upload's format: the suffix of the name it is read under.
_BY_SUBTYPE = {
    "json": ".json",
    "yaml": ".yaml",
    "x-yaml": ".yaml",
    "csv": ".csv",
    "zstd": ".jsonl.zst",
    "x-ndjson": ".jsonl",
    "jsonl": ".jsonl",
}
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# How a YAML stream of mappings starts (after blank and comment lines): a directive, a document
# marker, or a key. A body that does not start so is not parsed as YAML to find out.
_YAML_START = re.compile(
    rb"(?:[ \t]*(?:#[^\n]*)?\r?\n)*(?:%YAML|---|[A-Za-z_\"'][^\n:]*:(?:[ \t]|\r?\n))"
)
FORMAT_RULE = (
    "the format is the ?filename= suffix (.json, .jsonl, .yaml, .yml, .csv, .jsonl.zst), else the"
    " Content-Type (application/json, application/yaml, text/csv, application/x-ndjson,"
    " application/zstd), else what the body parses as"
)
"""How an upload's format is decided, in words (the errors that refuse one say it)."""


MAX_NAME_BYTES = 200
"""The longest upload file name taken (file systems stop at 255 bytes)."""


def upload_name(filename: str | None, content_type: str | None, body: bytes) -> tuple[str, str]:
    """The file name an upload is read under (its suffix picks the format), and how it was
    decided: ``filename`` if given; else the media type of ``content_type`` if it names a
    format; else what ``body`` is: zstd, one JSON value, JSON lines, or YAML (the YAML 1.2 core
    schema of ``events.yamlcore``, every document a mapping), JSON failing all of them."""
    if filename:
        return Path(filename).name, "from ?filename="
    media = (content_type or "").split(";")[0].strip().lower()
    subtype = media.rsplit("/", 1)[-1]
    if subtype in _BY_SUBTYPE:
        return "upload" + _BY_SUBTYPE[subtype], f"from the Content-Type {media}"
    return "upload" + _sniffed(body), "by its content (no ?filename= or format Content-Type)"


def _sniffed(body: bytes) -> str:
    if body.startswith(_ZSTD_MAGIC):
        return ".jsonl.zst"
    if _is_json(body):
        return ".json"
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) > 1 and all(_is_json(line) for line in lines):
        return ".jsonl"
    return ".yaml" if _YAML_START.match(body) and _is_yaml(body) else ".json"


def _is_json(text: bytes) -> bool:
    try:
        msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _is_yaml(text: bytes) -> bool:
    """Whether ``text`` is YAML whose every document is a mapping (as manifests are)."""
    try:
        docs = load_yaml(text)
    except InvalidManifest:
        return False
    return bool(docs) and all(isinstance(d, dict) for d in docs)


def ingest_upload(
    ledger: OpenedLog, source: str, body: bytes, name: str, *, decided: str = ""
) -> IngestResult:
    """Import one uploaded file of ``source``: ``body`` under the file name ``name`` (whose
    suffix picks the format; ``decided`` says how it was chosen, for the errors). Invalid rows
    refuse it whole.

    Raises:
        UsageError: ``name`` names no file (empty, ``.`` or ``..``), or holds a control
            character or more than ``MAX_NAME_BYTES`` bytes.
        As ``ingest``; their messages name the upload by ``name``, never the server's
        temporary folder; an ``InvalidInput`` says which format the upload was read as.
    """
    base = Path(name).name
    if base in ("", ".", ".."):
        raise UsageError(f"the upload's file name {name!r} names no file (e.g. runs.json)")
    # Only the last part of the name is used, inside a private temporary folder, so it can
    # name no other file; what no file name may hold is refused here rather than failing
    # when the file is written.
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in base) or _name_bytes(base) > MAX_NAME_BYTES:
        raise UsageError(
            f"the upload's file name {name[:80]!r} must be at most {MAX_NAME_BYTES} bytes of UTF-8 "
            "without control characters (e.g. runs.json)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / base
        path.write_bytes(body)
        try:
            return ingest(ledger, source, [path]).result
        except (ServiceError, EventError) as exc:
            _hide(exc, str(Path(tmp)) + "/")
            if isinstance(exc, InvalidInput) and not _parses_as(base, body):
                _say_format(exc, base, decided)
            raise


def _name_bytes(name: str) -> int:
    """The length of ``name`` in UTF-8 (a lone surrogate, which no file name takes, counts as
    too long)."""
    try:
        return len(name.encode())
    except UnicodeEncodeError:
        return MAX_NAME_BYTES + 1


def _parses_as(name: str, body: bytes) -> bool:
    """Whether ``body`` parses as the format ``name``'s suffix picks (True if not JSON or YAML:
    the importer's own message says what was wrong)."""
    if name.endswith(".json"):
        return _is_json(body)
    if name.endswith((".yaml", ".yml")):
        return _is_yaml(body)
    return True


def _say_format(exc: InvalidInput, name: str, decided: str) -> None:
    """Add to a refusal of an upload that did not parse the format it was read as, and what
    decides the format."""
    how = f" ({decided})" if decided else ""
    exc.detail += f"; the upload was read as {name}{how}: {FORMAT_RULE}"
    exc.args = (exc.detail, *exc.args[1:])


def _hide(exc: ServiceError | EventError, folder: str) -> None:
    """Remove ``folder`` from the messages of ``exc`` (they name the file they read)."""
    exc.detail = exc.detail.replace(folder, "")
    exc.args = tuple(a.replace(folder, "") if isinstance(a, str) else a for a in exc.args)
    report = exc.details.get("report")
    if isinstance(report, list):
        exc.details["report"] = [str(r).replace(folder, "") for r in report]
