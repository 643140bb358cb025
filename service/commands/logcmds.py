"""``benchproof init``, ``verify`` and ``log key|checkpoint|entries|proof``.

The output formats of ``log`` are a public contract that outside verifiers rely on:
- ``log key``: the C2SP vkey ``<origin>+<keyhash>+<base64>``;
- ``log checkpoint``: the latest signed checkpoint note, byte for byte as served;
- ``log entries``: JSON lines ``{"index": n, "leaf": base64 of the exact leaf bytes}``;
- ``log proof inclusion INDEX [SIZE]``: ``{"index", "treeSize", "hashes": [base64...]}``;
- ``log proof consistency OLD NEW``: ``{"oldSize", "newSize", "hashes": [base64...]}``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from events.stores.sqlite import committed_path, read_committed
from service.app import log
from service.app.verify import verify
from service.commands.base import Sub, position
from service.core.config import DataDir
from service.core.init import init_data_dir
from service.core.ledger import open_log
from service.core.logs import OpenedLog
from service.errors import UsageError

_ENC = msgspec.json.Encoder()


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "init", parents=[common], help="create the data directory, keys and log (idempotent)"
    )
    p.add_argument(
        "--origin", help="the log's identity, e.g. benchproof.example/log (first init only)"
    )
    p.set_defaults(handler=_init)

    p = sub.add_parser(
        "verify", parents=[common], help="verify every entry, the tree and the checkpoints"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print {ok, entries, root, checkpoints, checkpointSize, findings} as one JSON object",
    )
    p.set_defaults(handler=_verify)

    log = sub.add_parser(
        "log", parents=[common], help="read the log: key, checkpoint, entries, proofs"
    )
    logsub = log.add_subparsers(dest="log_command", metavar="WHAT", parser_class=type(log))
    logsub.required = True
    p = logsub.add_parser("key", parents=[common], help="the log's C2SP verifier key")
    p.set_defaults(handler=_key)
    p = logsub.add_parser("checkpoint", parents=[common], help="the latest signed checkpoint note")
    p.set_defaults(handler=_checkpoint)
    p = logsub.add_parser("entries", parents=[common], help="JSON lines {index, leaf}")
    p.add_argument("--start", type=position, default=0, help="first index (default 0)")
    p.add_argument(
        "--end", type=position, default=None, help="one past the last index (default: all)"
    )
    p.set_defaults(handler=_entries)
    proof = logsub.add_parser("proof", parents=[common], help="inclusion and consistency proofs")
    proofsub = proof.add_subparsers(dest="proof_kind", metavar="KIND", parser_class=type(log))
    proofsub.required = True
    p = proofsub.add_parser("inclusion", parents=[common], help="inclusion proof of INDEX in SIZE")
    p.add_argument("index", type=position)
    p.add_argument(
        "size", type=position, nargs="?", help="tree size (default: the latest checkpoint's)"
    )
    p.set_defaults(handler=_inclusion)
    p = proofsub.add_parser("consistency", parents=[common], help="consistency proof OLD -> NEW")
    p.add_argument("old", type=position)
    p.add_argument("new", type=position)
    p.set_defaults(handler=_consistency)


def _with_ledger(args: argparse.Namespace, fn: Callable[[OpenedLog], int]) -> int:
    with open_log(args.data) as ledger:
        return fn(ledger)


def _init(args: argparse.Namespace) -> int:
    ledger, created = init_data_dir(args.data, origin=args.origin, store=args.store)
    with ledger:
        state = "initialised" if created else "already initialised"
        print(f"{args.data}: {state}; log {ledger.store.origin}, {ledger.store.size} entries")
        print(f"log key: {ledger.signers.vkey}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    data = DataDir(args.data)
    # The mark is read first: sizes only grow, so the mark read before the verification's
    # snapshot is at most what that snapshot holds, whatever a live server commits meanwhile.
    # Only a SQLite store keeps one (beside its file).
    committed = read_committed(data.db) if data.on_sqlite else None
    report = verify(args.data)
    short = _shorter_than_committed(args.data, report.entries, committed) if report.ok else None
    findings = [_finding(f.position, f.reason) for f in report.findings]
    if short is not None:
        findings.append(_finding(report.entries, short))
    if args.json:
        answer = VerifyAnswer(
            not findings,
            report.entries,
            report.root,
            report.checkpoints,
            report.checkpoint_size,
            findings,
        )
        sys.stdout.buffer.write(_ENC.encode(answer) + b"\n")
    if short is not None:
        sys.stderr.write(f"benchproof: verify failed: {short}\n")
        return 1
    if report.ok:
        if not args.json:
            print(
                f"ok: {report.entries} entries verified; root {report.root}; "
                f"{report.checkpoints} checkpoints, the latest at size {report.checkpoint_size}"
            )
        return 0
    first = report.findings[0]
    more = f" ({len(report.findings) - 1} more problems)" if len(report.findings) > 1 else ""
    where = f" at position {first.position}" if first.position < _NO_POSITION else ""
    sys.stderr.write(f"benchproof: verify failed{where}: {first.reason}{more}\n")
    return 1


class VerifyFinding(msgspec.Struct, frozen=True):
    """One problem ``verify --json`` reports: the entry to blame (None: the log as a whole)."""

    position: int | None
    reason: str


class VerifyAnswer(msgspec.Struct, frozen=True):
    """``verify --json``: whether the log verified, its size and root (lowercase hex), how many
    checkpoints it holds and the size of the latest, and every problem found."""

    ok: bool
    entries: int
    root: str
    checkpoints: int
    checkpointSize: int | None
    findings: list[VerifyFinding]


_NO_POSITION = 2**62  # what ``verifier.log`` blames when no entry is to blame


def _finding(position: int, reason: str) -> VerifyFinding:
    return VerifyFinding(position if position < _NO_POSITION else None, reason)


def _shorter_than_committed(root: Path, entries: int, committed: int | None) -> str | None:
    """Why a log that verified is still not whole: it holds fewer entries than its commits
    had reached (``committed``, read from ``<db>-committed`` before the verification,
    ``events.stores.sqlite``): its file or -wal lost the tail."""
    if committed is None or committed <= entries:
        return None
    mark = committed_path(DataDir(root).db)
    return (
        f"the log holds {entries} entries, but its commits reached {committed} ({mark}): the "
        "database or its -wal file was truncated or replaced by an older copy (what is left "
        "verifies); restore it from a backup"
    )


def _key(args: argparse.Namespace) -> int:
    return _with_ledger(args, lambda ledger: _print(ledger.vkey))


def _print(text: str) -> int:
    print(text)
    return 0


def _checkpoint(args: argparse.Namespace) -> int:
    def run(ledger: OpenedLog) -> int:
        sys.stdout.buffer.write(log.latest_checkpoint(ledger).note)
        return 0

    return _with_ledger(args, run)


def _entries(args: argparse.Namespace) -> int:
    if args.end is not None and args.end < args.start:
        raise UsageError(f"--end {args.end} is before --start {args.start}")

    def run(ledger: OpenedLog) -> int:
        out = sys.stdout.buffer
        for item in log.entries(ledger.store, args.start, args.end):
            out.write(_ENC.encode(item) + b"\n")
        return 0

    return _with_ledger(args, run)


def _inclusion(args: argparse.Namespace) -> int:
    def run(ledger: OpenedLog) -> int:
        size = log.latest_checkpoint(ledger).size if args.size is None else args.size
        return _write(log.inclusion(ledger.store, args.index, size))

    return _with_ledger(args, run)


def _consistency(args: argparse.Namespace) -> int:
    return _with_ledger(
        args, lambda ledger: _write(log.consistency(ledger.store, args.old, args.new))
    )


def _write(answer: msgspec.Struct) -> int:
    sys.stdout.buffer.write(_ENC.encode(answer) + b"\n")
    return 0
