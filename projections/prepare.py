"""The second core of a rebuild: a worker process reads the log and prepares what a fold of a
run.ingested entry needs, while the main process folds and writes.

Most of a log is run.ingested entries, and what their fold computes for a run the projections
have not seen is a pure function of the entry alone: the view ``fold_run(digest, None, event,
ctx)`` and the manifests it records. The worker reads the leaves on its own read-only
connection, decodes them and computes that view (the same pure functions the main process
uses), and sends it as the view's JSON with the entry's record rows. The main process takes the
prepared view only where the fold would have made it (a run it has not seen, no waiting run
concerned); everywhere else, and for every other entry type, it reads the entry itself and folds
it as usual (``Materializer.rebuild_log``). The result is the same tables either way; a test
compares them.
"""

from __future__ import annotations

import contextlib
import pickle
import sqlite3
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from events.bulk import paused_gc
from events.decoding import decode_event
from events.entries import EVENT_PAYLOAD_TYPE, read_entry
from events.errors import EventError, LogCorrupted, LogError
from events.types import RunIngested
from projections.runs import Context, carried_manifests, fold_run

__all__ = ["Other", "Prepared", "prepared_batches"]

_ENC = msgspec.json.Encoder()
_INGESTED = "run.ingested.v1"


class Prepared(msgspec.Struct, frozen=True, array_like=True):
    """A run.ingested entry, folded as if its run were new."""

    seq: int
    recordedAt: str
    runDigest: str
    view: bytes  # JSON of the RunView the fold makes for an unseen run
    carried: tuple[str, ...]  # digests of the referenced manifests the event carries
    # (digest, kind, name, JSON) of each manifest it records that the worker had not sent yet
    manifests: tuple[tuple[str, str, str, bytes], ...]
    rowKey: str | None


class Other(msgspec.Struct, frozen=True, array_like=True):
    """Any other entry: the main process reads its leaf and folds it itself."""

    seq: int
    type: str
    subject: str
    leaf: bytes


def _prepare(seq: int, leaf: bytes, sent: set[str]) -> Prepared | Other:
    try:
        entry = read_entry(leaf, position=seq)
    except LogCorrupted:
        return Other(seq, "", "", leaf)  # the main process reads it again and reports it
    if entry.type != _INGESTED or entry.payload_type != EVENT_PAYLOAD_TYPE:
        return Other(seq, entry.type, entry.subject, leaf)
    try:
        event = decode_event(entry)
    except EventError:
        return Other(seq, entry.type, entry.subject, leaf)
    assert isinstance(event, RunIngested)  # noqa: S101 - the entry type says so
    view = fold_run(event.runDigest, None, event, Context(seq, entry.recordedAt))
    carried = carried_manifests(event)
    rows = []
    for digest, manifest in carried.items():
        if digest not in sent:
            sent.add(digest)
            rows.append(
                (digest, manifest["kind"], manifest["metadata"]["name"], _ENC.encode(manifest))
            )
    return Prepared(
        seq,
        entry.recordedAt,
        event.runDigest,
        _ENC.encode(view),
        tuple(carried),
        tuple(rows),
        event.rowKey,
    )


_HEADER = struct.Struct(">cQ")  # kind (B: a batch, E: an error, D: done), then the length


def _serve(path: str, start: int, end: int, batch: int, out: BinaryIO) -> None:
    """Read entries ``start <= seq < end`` and write them prepared to ``out``, ``batch`` at a
    time, then a done mark (or an error mark with its text)."""

    def send(kind: bytes, body: bytes) -> None:
        out.write(_HEADER.pack(kind, len(body)))
        out.write(body)

    try:
        with (
            paused_gc(),
            contextlib.closing(
                sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
            ) as db,
        ):
            sent: set[str] = set()
            chunk: list[Prepared | Other] = []
            rows = db.execute(
                "SELECT seq, leaf FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq",
                (start, end),
            )
            for seq, leaf in rows:
                chunk.append(_prepare(seq, bytes(leaf), sent))
                if len(chunk) >= batch:
                    send(b"B", pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
                    chunk = []
            if chunk:
                send(b"B", pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
        send(b"D", b"")
    except Exception as exc:  # noqa: BLE001 - reported to the main process, which raises
        send(b"E", f"{type(exc).__name__}: {exc}".encode())
    out.flush()


def prepared_batches(
    path: Path, start: int, end: int, *, batch: int = 2000
) -> Iterator[list[Prepared | Other]]:
    """The entries ``start <= seq < end`` of the log at ``path`` (committed ones: the reader
    has its own connection), prepared by a reader process (``python -m projections.prepare``),
    in order.

    Raises:
        LogError: the reader failed.
    """
    command = [sys.executable, "-m", "projections.prepare", str(path), str(start), str(end)]
    # Its stderr goes to a file, read only if it fails: a pipe nobody drains could fill and
    # stall it.
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(  # noqa: S603 - our own module, by the running interpreter
            [*command, str(batch)], stdout=subprocess.PIPE, stderr=errors
        )
        assert proc.stdout is not None  # noqa: S101 - piped above
        try:
            while True:
                header = proc.stdout.read(_HEADER.size)
                if len(header) < _HEADER.size:
                    proc.wait()
                    errors.seek(0)
                    lines = errors.read().decode(errors="replace").strip().splitlines()
                    raise LogError(
                        "the rebuild's reader process ended early"
                        + (f": {lines[-1]}" if lines else "")
                    )
                kind, length = _HEADER.unpack(header)
                body = proc.stdout.read(length)
                if kind == b"D":
                    return
                if kind == b"E":
                    raise LogError(f"the rebuild's reader process failed: {body.decode()}")
                chunk: Any = pickle.loads(body)  # noqa: S301 - from our own reader process
                yield chunk
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()


if __name__ == "__main__":
    # Through the module's own name, so the records pickle as projections.prepare's classes.
    from projections import prepare

    _path, _start, _end, _batch = sys.argv[1:5]
    prepare._serve(_path, int(_start), int(_end), int(_batch), sys.stdout.buffer)
