"""The ``benchproof`` command line.

Every subcommand takes ``--data DIR`` (and its other options) before or after its arguments,
prints a one-line message on bad input, and exits 0 (ok), 1 (verification failed or a
difference found), 2 (usage or invalid input), 3 (not found) or 4 (the environment failed: a
full disk, a read-only file system, a damaged database, an I/O error; nothing was written).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from events.errors import EventError, LogCorrupted
from events.stores.faults import StorageFault, storage_fault
from keys import KeyringError
from projections.errors import (
    AmbiguousRun,
    MalformedReference,
    ProjectionError,
    UnknownGroup,
    UnknownRun,
)
from service.app.runs import candidates
from service.commands.base import local_path
from service.core.config import STORE_ENV
from service.errors import InvalidInput, NotFound, ServiceError
from verifier.errors import VerifierError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_ENVIRONMENT = 0, 1, 2, 3, 4

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def default_data_dir() -> Path:
    return Path(os.environ.get("BENCHPROOF_DATA", "var"))


def _common() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--data",
        type=local_path,
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="data directory (default: $BENCHPROOF_DATA or ./var)",
    )
    common.add_argument(
        "--store",
        type=_store_url,
        default=argparse.SUPPRESS,
        metavar="URL",
        help="the log's store: sqlite:///PATH or postgresql://… (default: $BENCHPROOF_STORE, "
        "else the one `init --store` recorded in the data directory, else its SQLite file)",
    )
    return common


def _store_url(text: str) -> str:
    """A store URL, checked for its kind (``argparse`` type: a bad one is exit 2)."""
    from events.errors import LogError
    from events.stores import sqlite_path, store_kind

    try:
        if store_kind(text) == "sqlite":
            sqlite_path(text)
    except LogError as exc:
        raise argparse.ArgumentTypeError(exc.detail) from None
    if "\0" in text:
        raise argparse.ArgumentTypeError("a store URL cannot hold a NUL character")
    return text


def build_parser() -> argparse.ArgumentParser:
    from service.commands import answers, backup, migrate, register_all

    common = _common()
    parser = _Parser(
        prog="benchproof",
        description="A signed, event-sourced, offline-verifiable index of benchmark runs.",
        parents=[common],
    )
    sub: argparse._SubParsersAction[argparse.ArgumentParser]
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    register_all(sub, common)
    answers.register(sub, common)
    backup.register(sub, common)
    migrate.register(sub, common)
    return parser


_M_ARENA_MAX = -8  # glibc's mallopt parameters
_M_MMAP_THRESHOLD = -3
_MMAP_FROM = 256 * 1024
# The same, for the processes a command starts (a rebuild's shards, a verify's signature
# checkers): glibc reads them from the environment when a process starts.
_MALLOC_ENV = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": str(_MMAP_FROM)}


def _fewer_arenas() -> None:
    """Keep the heap of a long command near what it holds (glibc; elsewhere nothing):

    - At most two malloc arenas: each thread that frees large buffers (an audit's 8 fetch
      threads, a server's) otherwise fragments an arena of its own, and an audit's memory grew
      with the log (50 MB over 100k entries, 23 MB with two).
    - Buffers of 256 KiB and more (a bundle of leaves, a page of rows) always mapped apart and
      given back when freed. By default glibc raises that threshold to the largest buffer freed
      (up to 32 MiB), after which such buffers come from the heap between small objects that
      live on, and the heap cannot shrink: an audit's peak grew with the log (402 against 273 MB
      at 100k entries, in process).
    """
    for name, value in _MALLOC_ENV.items():
        os.environ.setdefault(name, value)
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_ARENA_MAX, 2)
    mallopt(_M_MMAP_THRESHOLD, _MMAP_FROM)
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        threading.Thread(target=_trimming, args=(trim,), name="malloc-trim", daemon=True).start()


TRIM_EVERY = 1.0
"""Seconds between two returns of freed heap pages to the system."""


def _trimming(trim: Callable[[int], int]) -> None:
    """Give the pages of the heap that are free back to the system, once a second, for as long
    as the command runs. What a command frees between the objects it keeps (the leaves of a
    piece, a page of rows, the buffers of a fetch) otherwise stays resident: an audit's memory
    at a million entries went from 395 to 573 MB from one run to the next, with the Python
    objects it holds the same (``malloc_trim`` releases the free pages of every arena)."""
    while True:
        time.sleep(TRIM_EVERY)
        trim(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code (the console script exits with it)."""
    _fewer_arenas()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.data_given = hasattr(args, "data")  # named on the command line (or not)
    if not hasattr(args, "data"):
        args.data = default_data_dir()
    if getattr(args, "store", None):
        # Every data directory this command opens (and every process it starts, as
        # ``serve --workers``) keeps its log there.
        os.environ[STORE_ENV] = args.store
    else:
        args.store = None
    handler: Handler = args.handler
    try:
        return handler(args)
    except NotFound as exc:
        return _fail(exc.detail, EXIT_NOT_FOUND)
    except InvalidInput as exc:
        code = _fail(exc.detail, EXIT_USAGE)
        report = exc.details.get("report")
        for line in report if isinstance(report, list) else []:
            sys.stderr.write(f"  {line}\n")
        return code
    except MalformedReference as exc:  # bad input, though an UnknownRun too
        return _fail(exc.detail, EXIT_USAGE)
    except (UnknownRun, UnknownGroup) as exc:
        return _fail(exc.detail, EXIT_NOT_FOUND)
    except AmbiguousRun as exc:
        return _fail(exc.detail + ": " + ", ".join(candidates(exc)), EXIT_USAGE)
    except (StorageFault, LogCorrupted) as exc:  # a damaged database, a full disk...
        return _fail(exc.detail, EXIT_ENVIRONMENT)
    except (EventError, ServiceError, VerifierError, KeyringError, ProjectionError) as exc:
        return _fail(exc.detail, EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:
        # The reader went away (``| head``); that is not our error.
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        # A file the command reads or writes (the stores' sessions say their databases'
        # faults as ``StorageFault``s themselves): a fault of the storage is one line, anything
        # else a bug to see.
        fault = storage_fault(exc, None)
        if fault is None:
            raise
        return _fail(fault.detail, EXIT_ENVIRONMENT)


def _fail(message: str, code: int) -> int:
    one_line = " ".join(message.split())
    sys.stderr.write(f"benchproof: error: {one_line}\n")
    return code


def run() -> NoReturn:
    """Console-script entry point."""
    raise SystemExit(main())


if __name__ == "__main__":
    run()
