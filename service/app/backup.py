"""``backup``: a consistent copy of a data directory, taken while the service goes on writing.

The database is copied with SQLite's online backup API, page by page, from one read snapshot
(a read transaction held on the source for the whole copy: in WAL mode the writers go on
appending meanwhile, and the copy is the log exactly as it stood when the snapshot began, with
its projections and the checkpoint that covers it). Beside it: the log's verifier key
(``log.vkey``), the mirror marker of a mirror, and (unless ``keys=False``) the private keys and
the operator tokens a restore needs to go on signing, in a folder only its owner may read. The
copy is built in a temporary folder beside ``dest`` and renamed into place when complete: a
``dest`` that exists is never touched, and an interrupted backup leaves no ``dest``.

A backup only reads its source: a read-only connection for the copy (``mode=ro``; on a volume
that cannot even host the WAL's ``-shm`` file, read-only or full, and with no WAL frames left,
the file as it stands: ``immutable=1``), the key files for the vkey, and no writer's handle (no
write transaction, no writer's lock, no projections' catch-up). So it works on a read-only mount
or a full disk, exactly when an operator needs one, and never contends with the server's writer.
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec

from events.keyring import KeyView
from events.stores.faults import storage_faults
from events.stores.sqlite import SqliteLog, write_committed
from events.stores.sqlite_backup import copy_database
from keys import (
    KeyFileError,
    KeyringError,
    NoteSigner,
    NoteVerifier,
    SigningKey,
    VerifyingKey,
    load_private_key,
    open_note,
)
from keys.notekeys import parse_vkey
from projections.queries import keyring
from service.core.config import DataDir
from service.core.mirror import MIRROR_FILE, MirrorInfo, read_mirror
from service.errors import NotInitialised, UsageError

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
    step: int = BACKUP_STEP,
    between: Callable[[], None] | None = None,
) -> BackedUp:
    """Copy the data directory ``root`` to the new folder ``dest`` (see the module's docstring).
    ``expect`` hears the database's page count, ``progress`` each step's pages; ``step`` is the
    pages copied per step of SQLite's backup API and ``between`` is called after each step
    (a test slows the copy with it, so that the server's commits land between its steps).

    Raises:
        UsageError: ``dest`` exists, or its parent folder does not; ``step`` is not positive;
            the source's log is damaged (its checkpoint does not cover it).
        NotInitialised: there is no log in ``root``.
        KeyFileError: a key file is missing, malformed, readable by others, or not the log's.
        StorageFault: the source cannot be read or the copy cannot be written (disk full...).
    """
    data, dest = DataDir(root), Path(dest)
    if step < 1:
        raise UsageError(f"a backup step copies at least one page, not {step}")
    if dest.exists() or dest.is_symlink():
        raise UsageError(f"{dest} exists: a backup is written to a new folder only")
    if not dest.parent.is_dir():
        raise UsageError(f"{dest.parent} is not a folder: create it first")
    if not data.exists():
        raise NotInitialised(f"no log in {root} (run `benchproof init --data {root}`)")
    if not data.on_sqlite:
        raise UsageError(
            f"{root} keeps its log on a database server: back it up with the server's own tools "
            "(pg_dump, base backups), or copy the log into a SQLite file with `benchproof "
            "migrate-store URL sqlite:///PATH`"
        )
    # The keys are read (and a bad key file refused) before anything is written; whether they
    # are the log's is checked on the copy, against its own keyring and checkpoint.
    mirror = read_mirror(data.root)
    signing = None if mirror is not None else _key_files(data, required=keys)
    tmp = dest.parent / f".{dest.name}.backup-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with storage_faults(tmp):
            tmp.mkdir(mode=0o700)
            os.chmod(tmp, 0o700)  # whatever the umask: it may hold private keys
            copy = DataDir.local(tmp)
            copy_database(
                data.db, copy.db, progress=progress, expect=expect, step=step, between=between
            )
            size, root_hex, origin, vkey = _check_copy(copy.db, data, mirror, signing)
            write_committed(copy.db, size)
            (tmp / VKEY_FILE).write_text(vkey + "\n", encoding="utf-8")
            if mirror is not None:
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


def _key_files(data: DataDir, *, required: bool) -> tuple[SigningKey, SigningKey] | None:
    """The index and log keys of ``data`` (read only). Without them (both files absent) and
    not ``required`` (a ``--no-keys`` copy): None, and the vkey comes from the log's keyring.

    Raises:
        KeyFileError: a key file is missing (when ``required`` or the other one is there),
            malformed or readable by others.
    """
    if not required and not data.index_key.exists() and not data.log_key.exists():
        return None
    return load_private_key(data.index_key), load_private_key(data.log_key)


def _check_copy(
    db: Path,
    data: DataDir,
    mirror: MirrorInfo | None,
    signing: tuple[SigningKey, SigningKey] | None,
) -> tuple[int, str, str, str]:
    """The copy's size, root (hex), origin and vkey. Its latest checkpoint must cover every
    entry (a snapshot is taken between transactions, so it always does) and open under the
    vkey; the key files (``signing``) must be the log's current index and log keys.

    Raises:
        UsageError: the checkpoint does not cover the copy (the source's log is damaged:
            ``benchproof verify`` it), or a mirror marker names another log.
        KeyFileError: a key file holds a key the log did not register for its role, or one
            whose checkpoint signature is not the log's.
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
        origin = log.origin
        if mirror is not None:
            if mirror.origin != origin:
                raise UsageError(f"{MIRROR_FILE} names {mirror.origin}, but the log is {origin}")
            vkey = mirror.vkey
        else:
            registered = keyring(log.session)
            if signing is None:
                vkey = _registered_vkey(registered, origin, size)
            else:
                _check_keys(registered, data, signing, size)
                vkey = NoteSigner(origin, signing[1]).vkey
            _check_note(latest.note, vkey, origin)
        return size, log.root(size).hex(), origin, vkey
    finally:
        log.close()
        # A read-only handle leaves the (empty) -wal and -shm files behind: not part of a copy.
        for suffix in ("-wal", "-shm"):
            extra = db.with_name(db.name + suffix)
            if extra.exists() and (suffix == "-shm" or extra.stat().st_size == 0):
                extra.unlink()


def _check_keys(
    registered: dict[str, KeyView],
    data: DataDir,
    signing: tuple[SigningKey, SigningKey],
    size: int,
) -> None:
    """The key files must hold the keys the log registered, still valid at ``size``."""
    for key, role, path in (
        (signing[0], "index", data.index_key),
        (signing[1], "log", data.log_key),
    ):
        view = registered.get(key.key_id)
        if view is None or view.role != role or not view.valid_at(size):
            raise KeyFileError(
                f"{path} holds key {key.key_id[:16]}…, which is not this log's current "
                f"{role} key: restore the key file the log registered",
                path=str(path),
            )


def _registered_vkey(registered: dict[str, KeyView], origin: str, size: int) -> str:
    """The vkey of the log key the log registered (a ``--no-keys`` copy without key files)."""
    for view in registered.values():
        if view.role == "log" and view.name == origin and view.valid_at(size):
            try:
                public = VerifyingKey.from_raw(base64.b64decode(view.publicKey))
            except (KeyringError, ValueError):
                continue
            return NoteVerifier.for_key(origin, public).vkey
    raise UsageError(f"the log {origin} registered no valid log key: run `benchproof verify`")


def _check_note(note: bytes, vkey: str, origin: str) -> None:
    """The latest checkpoint note must open under ``vkey`` (the log key signed it)."""
    try:
        open_note(note, [parse_vkey(vkey)])
    except KeyringError as exc:
        raise KeyFileError(
            f"the log's latest checkpoint does not open under the log key {vkey.split('+')[1]} "
            f"of {origin} ({exc}): the key file is not the log's, or the log is damaged",
            path="log.key",
        ) from None


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
