"""``benchproof migrate-store SRC DST``: copy a log between stores, leaf for leaf, verified on
arrival, then rebuild its projections there (``service.app.migrate``).

Exit 0 when DST holds SRC's log (copied now, or already), 1 when SRC does not verify or the copy
does not equal it on arrival, 2 on bad input (a URL that names no store, the same store twice, a
DST that holds another log: nothing is written to it), 4 when a store cannot be reached or
written."""

from __future__ import annotations

import argparse
import sys

import msgspec

from events.errors import LogError
from events.stores import sqlite_path, store_kind
from service.app.migrate import MigrationRefused, migrate_store
from service.commands.base import Sub
from service.console.progress import Progress


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "migrate-store",
        parents=[common],
        help="copy a log to another store (SQLite <-> PostgreSQL), verified, with its views",
        description=(
            "Copy the log at SRC into the store DST, leaf for leaf: SRC is verified first (as "
            "`benchproof verify` does); DST is made if absent and must be empty, or hold a "
            "beginning of SRC byte for byte (an interrupted copy goes on from there); every "
            "checkpoint is taken with SRC's own signed note; on arrival DST's root and "
            "checkpoints must equal SRC's; then DST's projections are rebuilt. Stores are URLs: "
            "sqlite:///PATH or postgresql://USER@HOST:PORT/DB[?options=-csearch_path%%3DSCHEMA]. "
            "Keys are not involved: they stay in the data directory, which names its store "
            "with --store (or `init --store`)."
        ),
    )
    p.add_argument("src", type=_store_url, metavar="SRC", help="the store that holds the log")
    p.add_argument("dst", type=_store_url, metavar="DST", help="the store to copy it into")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=_migrate)


def _store_url(text: str) -> str:
    """A store URL, checked for its kind and, for SQLite, its file (argparse ``type``: a bad one
    is one line and exit 2)."""
    if "\0" in text:
        raise argparse.ArgumentTypeError("a store URL cannot hold a NUL character")
    try:
        if store_kind(text) == "sqlite":
            sqlite_path(text)
    except LogError as exc:
        raise argparse.ArgumentTypeError(exc.detail) from None
    return text


def _migrate(args: argparse.Namespace) -> int:
    try:
        with Progress("migrate-store: entries copied") as bar:
            done = migrate_store(
                args.src, args.dst, progress=bar.advance, expect=bar.expect, note=bar.note
            )
    except MigrationRefused as exc:
        message = " ".join(exc.detail.split())
        if args.json:
            sys.stdout.buffer.write(msgspec.json.encode({"ok": False, "refused": message}) + b"\n")
        sys.stderr.write(f"benchproof: migrate-store refused: {message}\n")
        return 1
    if args.json:
        sys.stdout.buffer.write(msgspec.json.encode(done) + b"\n")
    else:
        print(done.summary())
    return 0
