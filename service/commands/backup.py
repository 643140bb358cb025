"""``benchproof backup DEST``: a consistent online copy of the data directory."""

from __future__ import annotations

import argparse
import sys

import msgspec

from service.app.backup import backup
from service.commands.base import Sub, local_path
from service.console.progress import Progress


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "backup",
        parents=[common],
        help="copy the data directory to DEST while the service goes on writing",
        description="A consistent copy of the data directory (SQLite's online backup API, from "
        "one snapshot: writers go on meanwhile) in the new folder DEST: the database, the log's "
        "vkey and, unless --no-keys, the private keys and operator tokens (DEST is then 0700, "
        "its secrets 0600). DEST must not exist; the copy is renamed into place when complete. "
        "The data directory is only read (no writer's lock, nothing written there): a backup "
        "works from a read-only mount or a full disk.",
    )
    p.add_argument("dest", type=local_path, metavar="DEST", help="the new folder to write")
    p.add_argument(
        "--no-keys",
        action="store_true",
        help="leave out the private keys and tokens (the copy verifies and replays, but a "
        "server on it cannot sign)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=_backup)


def _backup(args: argparse.Namespace) -> int:
    with Progress("backup: pages copied") as bar:
        done = backup(
            args.data, args.dest, keys=not args.no_keys, progress=bar.advance, expect=bar.expect
        )
    if args.json:
        sys.stdout.buffer.write(msgspec.json.encode(done) + b"\n")
        return 0
    print(
        f"backed up {done.origin} at size {done.size} (root {done.root}) to {done.path}: "
        f"{done.bytes:,} bytes of database"
    )
    if done.keys:
        print(
            f"{done.path} holds the log's private keys and operator tokens (folder 0700, "
            "files 0600): keep it as private as the data directory"
        )
    else:
        print(f"{done.path} holds no private keys: restore the keys folder to sign again")
    return 0
