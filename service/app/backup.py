"""``backup``: a consistent copy of a data directory, taken while the service goes on writing.

The database is copied with SQLite's online backup API, page by page, from one read snapshot
(a read transaction held on the source for the whole copy: in WAL mode the writers go on
appending meanwhile, and the copy is the log exactly as it stood when the snapshot began, with
its projections and the checkpoint that covers it). Beside it: the log's verifier key
(``log.vkey``), the mirror marker of a mirror, and (unless ``keys=False``) the private keys and
the operator tokens a restore needs to go on signing, in a folder only its owner may read. The
copy is built in a temporary folder beside ``dest`` and renamed into place when complete: a
``dest`` that exists is never touched, and an interrupted backup leaves no ``dest``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from events.stores.faults import storage_fault
from events.stores.sqlite import SqliteLog, write_committed
from service.config import DataDir
from service.errors import NotInitialised, UsageError
from service.ledger import MIRROR_FILE, Ledger

__all__ = ["BACKUP_STEP", "VKEY_FILE", "BackedUp", "backup"]

BACKUP_STEP = 256  # pages (1 MiB of 4 KiB pages) per step: the progress bar moves per step
VKEY_FILE = "log.vkey"


class BackedUp(msgspec.Struct, frozen=True):
    """What ``backup`` wrote: the folder (``path``), the log's size and root (hex) in the copy,
    the database's bytes, and whether it holds the private keys (``keys``)."""

    path: str
    origin: str
    size: int
    root: str
    bytes: int
    keys: bool
    files: list[str]


def backup(
    root: Path,
    dest: Path,
    *,
    keys: bool = True,
    progress: Callable[[int], None] | None = None,
    expect: Callable[[int], None] | None = None,
) -> BackedUp:
    """Copy the data directory ``root`` to the new folder ``dest`` (see the module's docstring).
    ``expect`` hears the database's page count, ``progress`` each step's pages.

    Raises:
        UsageError: ``dest`` exists, or its parent folder does not.
        NotInitialised: there is no log in ``root``.
        StorageFault: the source cannot be read or the copy cannot be written (disk full...).
    """
    data, dest = DataDir(root), Path(dest)
    if dest.exists() or dest.is_symlink():
        raise UsageError(f"{dest} exists: a backup is written to a new folder only")
    if not dest.parent.is_dir():
        raise UsageError(f"{dest.parent} is not a folder: create it first")
    if not data.exists():
        raise NotInitialised(f"no log in {root} (run `benchproof init --data {root}`)")
    # The vkey, and a check that the keys are the log's, before anything is written.
    with Ledger.open(data.root) as ledger:
        vkey = ledger.signers.vkey
    tmp = dest.parent / f".{dest.name}.backup-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with _writing(tmp):
            tmp.mkdir(mode=0o700)
            os.chmod(tmp, 0o700)  # whatever the umask: it may hold private keys
            copy = DataDir(tmp)
            _copy_database(data.db, copy.db, progress=progress, expect=expect)
            size, root_hex, origin = _check_copy(copy.db)
            write_committed(copy.db, size)
            (tmp / VKEY_FILE).write_text(vkey + "\n", encoding="utf-8")
            if (data.root / MIRROR_FILE).exists():
                shutil.copy2(data.root / MIRROR_FILE, tmp / MIRROR_FILE)
            if keys:
                _copy_secrets(data, copy)
            files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
            _sync(tmp)
            if dest.exists():
                raise UsageError(f"{dest} appeared while the backup was taken: not replaced")
            os.rename(tmp, dest)
            _fsync_folder(dest.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    has_keys = keys and (dest / "keys").is_dir()
    return BackedUp(
        path=str(dest),
        origin=origin,
        size=size,
        root=root_hex,
        bytes=(dest / "benchproof.db").stat().st_size,
        keys=has_keys,
        files=files,
    )


@contextlib.contextmanager
def _writing(where: Path) -> Iterator[None]:
    """A full disk or a read-only folder where the copy is written, as one storage fault."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        fault = storage_fault(exc, where)
        if fault is None:
            raise
        raise fault from exc


def _copy_database(
    source: Path,
    target: Path,
    *,
    progress: Callable[[int], None] | None,
    expect: Callable[[int], None] | None,
) -> None:
    """Copy ``source`` to ``target`` with the online backup API, from one read snapshot."""
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    dst = sqlite3.connect(target, isolation_level=None)
    try:
        src.execute("PRAGMA busy_timeout=60000")
        # One snapshot for every step: with it held, the writers' commits meanwhile neither
        # enter the copy nor restart it.
        src.execute("BEGIN")
        pages = src.execute("PRAGMA page_count").fetchone()[0]
        if expect is not None:
            expect(int(pages))
        done = [0]

        def step(_status: int, remaining: int, total: int) -> None:
            if progress is not None:
                now = total - remaining
                progress(now - done[0])
                done[0] = now

        src.backup(dst, pages=BACKUP_STEP, progress=step)
        src.execute("COMMIT")
        dst.execute("PRAGMA journal_mode=WAL")
        dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        dst.close()
        src.close()
    with open(target, "rb") as f:
        os.fsync(f.fileno())


def _check_copy(db: Path) -> tuple[int, str, str]:
    """The copy's size, root (hex) and origin; its latest checkpoint must cover every entry
    (a snapshot is taken between transactions, so it always does).

    Raises:
        UsageError: it does not (the source's log is damaged: ``benchproof verify`` it).
    """
    log = SqliteLog.open_readonly(db)
    try:
        size = log.refresh()
        latest = log.latest_checkpoint()
        if latest is None or latest.size != size:
            covered = "none" if latest is None else str(latest.size)
            raise UsageError(
                f"the copy holds {size} entries but its latest checkpoint covers {covered}: "
                "the source log is damaged (run `benchproof verify`); no backup written"
            )
        return size, log.root(size).hex(), log.origin
    finally:
        log.close()
        # A read-only handle leaves the (empty) -wal and -shm files behind: not part of a copy.
        for suffix in ("-wal", "-shm"):
            extra = db.with_name(db.name + suffix)
            if extra.exists() and (suffix == "-shm" or extra.stat().st_size == 0):
                extra.unlink()


def _copy_secrets(data: DataDir, copy: DataDir) -> None:
    """The private keys (folder 0700, files 0600) and the operator tokens (0600)."""
    if data.keys.is_dir():
        copy.keys.mkdir(mode=0o700)
        os.chmod(copy.keys, 0o700)
        for key in sorted(data.keys.iterdir()):
            if key.is_file():
                target = copy.keys / key.name
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(key.read_bytes())
    if data.tokens.exists():
        fd = os.open(copy.tokens, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data.tokens.read_bytes())


def _sync(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
