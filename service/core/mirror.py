"""A mirror: a data directory that holds another log's leaves at the same positions and that
log's own checkpoint notes, and no keys (``benchproof import-log``, ``service.app.mirror``).

``mirror.json`` marks it (``MirrorInfo``). ``Mirror`` is its log, open: it reads as any other
(``OpenedLog``), takes leaves from its origin (``taking``), and has nothing that appends or
signs: a path that writes asks for a ledger (``writer``) and is refused (``MirrorReadOnly``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import msgspec

from events.port import stored_entries
from events.stores import open_store
from events.stores.sqlbase import SqlLog
from keys import KeyringError, NoteSigner, NoteVerifier
from keys.notekeys import parse_vkey
from service.core.config import DataDir
from service.core.logs import Clock, OpenedLog, utcnow
from service.errors import MirrorReadOnly, NotInitialised, UsageError

__all__ = [
    "MIRROR_FILE",
    "MIRROR_FORMAT",
    "Mirror",
    "MirrorInfo",
    "mirror_refusal",
    "read_mirror",
    "write_mirror",
]

MIRROR_FILE = "mirror.json"
"""The file that marks a data directory as a mirror (``MirrorInfo``)."""
MIRROR_FORMAT = "benchproof-mirror/v1"


class MirrorInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What ``mirror.json`` says: the log this directory mirrors (``origin``), the verifier key
    of that log's checkpoints (C2SP vkey, as given to ``benchproof import-log --log-key``) and
    where the mirror last took entries from (a server's URL or an exported segment's folder)."""

    origin: str
    vkey: str
    source: str
    format: str = MIRROR_FORMAT


def read_mirror(root: Path) -> MirrorInfo | None:
    """The mirror marker of the data directory ``root``, or None if it is not a mirror.

    Raises:
        UsageError: ``mirror.json`` is there but unreadable or malformed (the directory is
            not opened as a writable log either).
    """
    path = Path(root) / MIRROR_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        info = msgspec.json.decode(data, type=MirrorInfo)
        verifier = parse_vkey(info.vkey)
    except (msgspec.DecodeError, KeyringError) as exc:
        raise UsageError(f"{path} is not a mirror marker: {exc}") from None
    if info.format != MIRROR_FORMAT or verifier.name != info.origin:
        raise UsageError(f"{path} is not a {MIRROR_FORMAT} marker of the log {info.origin!r}")
    return info


def write_mirror(root: Path, info: MirrorInfo) -> None:
    """Write (atomically replace) the mirror marker of the data directory ``root``."""
    path = Path(root) / MIRROR_FILE
    tmp = path.with_name(f".{MIRROR_FILE}.{os.getpid()}.tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(info), indent=2) + b"\n")
    os.replace(tmp, path)


def mirror_refusal(
    origin: str, why: str = "it takes no local writes; write to the origin log"
) -> MirrorReadOnly:
    """The refusal of a mirror of ``origin``, saying ``why``."""
    return MirrorReadOnly(f"this data directory is a mirror of {origin}: {why}", origin=origin)


class Mirror(OpenedLog):
    """The log of a mirror, open: read as any other, fed only by its origin's leaves."""

    def __init__(self, data: DataDir, store: SqlLog, info: MirrorInfo, clock: Clock) -> None:
        super().__init__(data, store, clock)
        self.info = info
        self._verifier = parse_vkey(info.vkey)
        if store.origin != info.origin:
            store.close()
            raise UsageError(
                f"{data.root} mirrors {info.origin} ({MIRROR_FILE}), but its log is {store.origin}"
            )
        self._catch_up()

    @classmethod
    def open(cls, root: Path, *, clock: Clock = utcnow, store: str | None = None) -> Mirror:
        """Open the mirror in the data directory ``root``, its log in ``store`` (a URL; default:
        the directory's).

        Raises:
            NotInitialised: there is no log there.
            UsageError: no mirror marker, a malformed one, or one naming another log.
        """
        data = DataDir(root, store)
        if not data.exists():
            raise NotInitialised(f"no log in {root} (run `benchproof init --data {root}`)")
        info = read_mirror(data.root)
        if info is None:
            raise UsageError(f"{root} is not a mirror: it holds no {MIRROR_FILE}")
        return cls(data, open_store(data.store), info, clock)

    @property
    def mirror(self) -> MirrorInfo:
        return self.info

    @property
    def vkey(self) -> str:
        return self.info.vkey

    @property
    def log_verifier(self) -> NoteVerifier:
        return self._verifier

    @property
    def note_signer(self) -> NoteSigner | None:
        return None

    def writer(self, why: str | None = None) -> NoReturn:
        if why is None:
            raise mirror_refusal(self.info.origin)
        raise mirror_refusal(self.info.origin, why)

    @contextlib.contextmanager
    def taking(self) -> Iterator[SqlLog]:
        """A write transaction in which the caller appends its origin's leaves and checkpoint
        note to the store it yields (``LogStore.append_leaves``) and checks them; raising undoes
        it all. On leaving it, the projections fold what was taken, in that transaction."""
        with self.store.transaction():
            yield self.store
            position, size = self.projections.position(), self.store.refresh()
            self.projections.apply(list(stored_entries(self.store, position, size)))
