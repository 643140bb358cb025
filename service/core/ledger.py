"""The ledger: the log store, the signing keys and the projections, wired together.

Everything that writes to the log goes through ``Ledger.append``: events are encoded once,
signed by the index key (two threads), committed in one transaction with their tree nodes, the
projections and a signed checkpoint.

A data directory that holds ``mirror.json`` is a mirror of another log (``benchproof
import-log``, ``service.app.mirror``): the same leaves at the same positions and the origin's
own checkpoint notes, and no keys. Its ledger reads as any other, and refuses every local write
and every signature (``MirrorReadOnly``).
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from events.entries import Pending
from events.errors import LogError
from events.port import Appended, Session, stored_entries
from events.stores import display_store, log_exists, open_reader, open_store, same_store
from events.stores.faults import StorageFault
from events.stores.sqlbase import SqlLog
from events.stores.sqlite_schema import WriterBusy
from events.types import EVENT_ENCODER, Event, KeyRegistered, PolicyChanged, event_tag
from keys import (
    KeyFileError,
    KeyringError,
    NoteSigner,
    NoteVerifier,
    SigningKey,
    generate_key_file,
    load_private_key,
)
from keys.notekeys import parse_vkey, valid_key_name
from projections import schema as projection_schema
from projections.materialize import Materializer
from projections.queries import KeyringCache, keyring
from projections.shards import Unshardable, open_rebuilt, rebuild_in_one, rebuild_sharded
from projections.tolerance import DEFAULT_POLICY, POLICY_NAME
from service.core.config import DEFAULT_ORIGIN, DataDir
from service.core.groupcommit import GroupCommit, Request
from service.core.signing import Signers, envelope_signer
from service.errors import MirrorReadOnly, NotInitialised, UsageError

__all__ = [
    "MIRROR_FILE",
    "MIRROR_FORMAT",
    "Clock",
    "Ledger",
    "MirrorInfo",
    "MirrorSigners",
    "init_data_dir",
    "mirror_refusal",
    "pending_of",
    "read_mirror",
    "scratch_folder",
    "utcnow",
    "write_mirror",
]

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def pending_of(event: Event, subject: str) -> Pending:
    """An event on its way into the log, encoded once."""
    return Pending(
        type=event_tag(event), subject=subject, payload=EVENT_ENCODER.encode(event), decoded=event
    )


# Entry types that change nothing a request's check reads (checks read the keyring, whether an
# attestation was withdrawn or hidden, whether a report is open): the group commit holds the
# requests that bring only these and appends them together, just before the next request that
# brings anything else runs its check. Their own checks still run in order.
CHECK_NEUTRAL = frozenset({"attestation.posted.v1", "report.filed.v1"})

# From this many entries on, a rebuild runs on every core (``projections.shards``): starting its
# processes, about a third of a second, is then worth it.
PARALLEL_FROM = 20_000


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


class MirrorSigners(Signers):
    """A mirror's stand-in for the signing keys: it knows the origin's checkpoint verifier key
    and refuses everything that would sign (a mirror holds no keys)."""

    def __init__(self, mirror: MirrorInfo) -> None:
        # No ``Signers.__init__``: there are no keys to hold, and no signing threads.
        self.origin = mirror.origin
        self._vkey = mirror.vkey
        self._verifier = parse_vkey(mirror.vkey)

    def __getattr__(self, name: str) -> object:
        # Called only for what this stand-in lacks: the keys themselves.
        if name in ("index", "log", "note_signer"):
            raise mirror_refusal(self.origin, "it holds no keys and signs nothing")
        raise AttributeError(name)

    @property
    def log_verifier(self) -> NoteVerifier:
        return self._verifier

    @property
    def vkey(self) -> str:
        return self._vkey

    def sign_chunks(self, chunks: list[list[Pending]]) -> Iterator[list[bytes]]:
        raise mirror_refusal(self.origin)

    def sign_checkpoint(self, body: str) -> bytes:
        raise mirror_refusal(self.origin, "it signs no checkpoints; it serves the origin's")

    def close(self) -> None:
        pass


class Ledger:
    """The log of one data directory, open for reading and appending (a mirror's: reading
    only; ``mirror`` is its marker, None for a log of its own)."""

    def __init__(
        self,
        data: DataDir,
        store: SqlLog,
        signers: Signers,
        clock: Clock,
        *,
        mirror: MirrorInfo | None = None,
    ) -> None:
        self.data = data
        self.store = store
        self.signers = signers
        self.clock = clock
        self.mirror = mirror
        if all(store.has(name) for name in projection_schema.NAMES):
            self.projections = Materializer(store.session, create=False)
        else:
            # Made under the writers' lock: processes starting together on one new store (a
            # database server's) must not race to create the same tables. Only then: a read
            # command never waits behind a long write.
            with store.transaction():
                self.projections = Materializer(store.session)
        store.on_rollback.append(self.projections.forget)
        # The keyring for checks made on read-only handles of this log (outside the writer's
        # transaction; ``self.projections.keyring()`` inside it).
        self.keyring = KeyringCache()
        self.group: GroupCommit[Pending, Session, Appended] = GroupCommit(
            # A busy writer or a failed disk is the group's fault: trying each request alone
            # would only meet it again.
            self._commit_group,
            whole=(WriterBusy, StorageFault),
        )
        if mirror is not None and store.origin != mirror.origin:
            store.close()
            raise UsageError(
                f"{data.root} mirrors {mirror.origin} ({MIRROR_FILE}), but its log is "
                f"{store.origin}"
            )
        self._catch_up()
        if store.size > 0 and mirror is None:
            self._check_keys()

    @property
    def note_signer(self) -> NoteSigner | None:
        """The log key's checkpoint (note) signer; None on a mirror, which holds no keys."""
        return None if self.mirror is not None else self.signers.note_signer

    def _refuse_on_mirror(self) -> None:
        if self.mirror is not None:
            raise mirror_refusal(self.mirror.origin)

    def _check_keys(self) -> None:
        """The key files must hold the keys the log registered, still valid: the index key
        (role ``index``) and the log key (role ``log``, named as the origin).

        Raises:
            KeyFileError: a key file holds another key, or one the log has revoked.
        """
        registered = keyring(self.store.session)
        size = self.store.size
        for path, key, role in (
            (self.data.index_key, self.signers.index, "index"),
            (self.data.log_key, self.signers.log, "log"),
        ):
            view = registered.get(key.key_id)
            if view is None or view.role != role or not view.valid_at(size):
                self.close()
                raise KeyFileError(
                    f"{path} holds key {key.key_id[:16]}…, which is not this log's current "
                    f"{role} key: restore the key file the log registered"
                )

    @classmethod
    def open(cls, root: Path, *, clock: Clock = utcnow, store: str | None = None) -> Ledger:
        """Open an initialised data directory (or a mirror: ``mirror.json``, no keys), its log
        in ``store`` (a URL; default: the directory's, ``DataDir.store``).

        Raises:
            NotInitialised: there is no log there (run ``benchproof init``).
            KeyFileError: a key file is missing, malformed or readable by others.
            UsageError: a malformed mirror marker, or one naming another log.
        """
        data = DataDir(root, store)
        if not data.exists():
            raise NotInitialised(f"no log in {root} (run `benchproof init --data {root}`)")
        mirror = read_mirror(data.root)
        if mirror is not None:
            return cls(data, open_store(data.store), MirrorSigners(mirror), clock, mirror=mirror)
        opened = open_store(data.store)
        try:
            signers = Signers(
                load_private_key(data.index_key), load_private_key(data.log_key), opened.origin
            )
        except BaseException:
            opened.close()
            raise
        return cls(data, opened, signers, clock)

    def close(self) -> None:
        self.group.close()
        self.signers.close()
        self.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def rebuild_projections(self, *, parallel: bool | None = None, batch_size: int = 4000) -> int:
        """Drop every projection and rebuild it from the whole log, in the caller's transaction
        (which holds the write lock); return the number of entries applied. ``parallel``: as
        ``rebuild_scratch``, whose result then replaces the projections."""
        size = self.store.refresh()
        if not _parallel(size, parallel):
            entries = stored_entries(self.store, 0, size)
            return self.projections.rebuild(entries, batch_size=batch_size)
        with scratch_folder(self.data.root, "rebuild") as tmp:
            rebuilt, schemas = self.rebuild_scratch(size, tmp, parallel=True, batch_size=batch_size)
            try:
                self.projections.replace_with(rebuilt, schemas)
            finally:
                rebuilt.close()
        return size

    def adopt_rebuild(self, rebuilt: Session, schemas: Sequence[str], size: int) -> None:
        """Replace the projections with a scratch rebuild of the first ``size`` entries
        (``rebuild_scratch``), then fold what was appended since, in one transaction under the
        write lock."""
        with self.store.transaction():
            self.projections.replace_with(rebuilt, schemas)
            end = self.store.refresh()
            if end > size:
                self.projections.apply(list(stored_entries(self.store, size, end)))

    def rebuild_scratch(
        self, size: int, folder: Path, *, parallel: bool | None = None, batch_size: int = 4000
    ) -> tuple[Session, list[str]]:
        """Rebuild every projection of the first ``size`` entries into scratch databases under
        ``folder``, leaving the live ones as they are; return a connection that reads them and
        the schemas a table's rows come from (``projections.schema.rebuilt_rows``).
        ``parallel``: on every core (``projections.shards``); by default, from
        ``PARALLEL_FROM`` entries on.

        Raises:
            LogError, LogCorrupted, EventError: as the plain rebuild.
        """
        if _parallel(size, parallel) and self.data.on_sqlite:  # its shards read the file
            try:
                paths = rebuild_sharded(
                    self.data.db, size, folder, workers=_WORKERS, batch=batch_size
                )
            except Unshardable:
                pass  # a log its subjects cannot split: one process does it below
            else:
                return open_rebuilt(paths)
        entries = stored_entries(self.store, 0, size)
        return rebuild_in_one(folder / "all.db", entries, batch_size=batch_size)

    def _catch_up(self) -> None:
        """Rebuild projections written in another format (by an older version of the folds);
        apply entries the projections have not seen (e.g. after a replay was interrupted).
        Decided again under the write lock: another process may have done it meanwhile."""
        if not self.projections.stale() and self.projections.position() >= self.store.refresh():
            return
        with self.store.transaction():
            if self.projections.stale() or self.projections.position() == 0:
                # Nothing folded yet (a mirror just taken in): a rebuild, on every core for a
                # large log, is the quickest way there.
                self.rebuild_projections()
            else:
                size, position = self.store.refresh(), self.projections.position()
                if position < size:
                    self.projections.apply(list(stored_entries(self.store, position, size)))

    def append(
        self, events: Sequence[tuple[Event, str]], *, progress: Callable[[int], None] | None = None
    ) -> list[Appended]:
        """Append ``(event, subject)`` pairs as one batch (signed by the index key);
        ``progress`` hears of each chunk written."""
        return self.append_pending([pending_of(e, s) for e, s in events], progress=progress)

    def append_pending(
        self,
        pending: Sequence[Pending],
        *,
        progress: Callable[[int], None] | None = None,
        check: Callable[[Session], None] | None = None,
    ) -> list[Appended]:
        """Append pendings (some may carry an actor's own envelope) as one batch, committed
        together with the batches other threads append meanwhile (group commit: one fsync for
        all of them). ``check`` runs inside that transaction just before the append, on the
        session the projections read (raise to refuse this batch alone). ``progress`` hears of
        each chunk written (such a batch is committed on its own).

        Raises:
            MirrorReadOnly: this is a mirror (nothing is appended).
        """
        self._refuse_on_mirror()
        signed = self._signed(pending)
        if progress is not None:
            with self.store.transaction() as session:
                self._catch_up_if_needed()
                if check is not None:
                    check(session)
                return self._append(signed, progress)
        return self.group.submit(signed, check)

    async def append_pending_async(
        self,
        pending: Sequence[Pending],
        *,
        check: Callable[[Session], None] | None = None,
    ) -> list[Appended]:
        """``append_pending`` for a handler on an event loop: the loop serves other requests
        while the group commit's writer thread commits this batch with those queued meanwhile.

        Raises:
            MirrorReadOnly: this is a mirror (nothing is appended).
        """
        self._refuse_on_mirror()
        return await self.group.submit_async(self._signed(pending), check)

    def _signed(self, pending: Sequence[Pending]) -> list[Pending]:
        index = self.signers.index.key_id
        return [
            msgspec.structs.replace(
                p, signer=envelope_signer(p.envelope) if p.envelope is not None else index
            )
            for p in pending
        ]

    def _append(
        self, signed: Sequence[Pending], progress: Callable[[int], None] | None = None
    ) -> list[Appended]:
        self._refuse_on_mirror()
        return self.store.append(
            signed,
            sign=self.signers.sign_chunks,
            sign_checkpoint=self.signers.sign_checkpoint,
            now=self.clock(),
            project=self.projections,
            progress=progress,
        )

    def _commit_group(self, batch: list[Request[Pending, Session, Appended]]) -> None:
        """Commit the requests of one group in one transaction (``GroupCommit``), in order: each
        request's check runs after the requests before it were appended and projected, so it
        judges its entry at the position the entry takes and sees what the group changed (a
        revocation, a name taken); one fsync still serves them all. Requests that bring only
        ``CHECK_NEUTRAL`` entries are appended together (their checks cannot tell the
        difference: nothing they append changes what a check reads)."""
        with self.store.transaction() as session:
            self._catch_up_if_needed()
            held: list[Request[Pending, Session, Appended]] = []
            for request in batch:
                neutral = all(p.type in CHECK_NEUTRAL for p in request.items)
                if not neutral:
                    self._append_held(held)
                if request.check is not None:
                    try:
                        request.check(session)
                    except Exception as exc:  # noqa: BLE001 - this request's refusal, kept for it
                        request.error = exc
                        continue
                if neutral:
                    held.append(request)
                else:
                    request.result = self._append(request.items) if request.items else []
            self._append_held(held)

    def _append_held(self, held: list[Request[Pending, Session, Appended]]) -> None:
        """Append the items of the ``held`` requests in one batch (one statement per table, not
        one per request), and hand each request its own answers."""
        items = [p for request in held for p in request.items]
        appended = self._append(items) if items else []
        start = 0
        for request in held:
            request.result = appended[start : start + len(request.items)]
            start += len(request.items)
        held.clear()

    def _catch_up_if_needed(self) -> None:
        if self.projections.position() != self.store.refresh():
            self._catch_up()


@contextlib.contextmanager
def scratch_folder(root: Path, kind: str) -> Iterator[Path]:
    """A temporary folder in the data directory ``root`` for a scratch rebuild, named after this
    process and removed after. Folders that processes now gone left behind (killed in the
    middle of a rebuild) are removed first: a scratch copy is about as large as the
    projections."""
    for old in root.glob(".scratch-*"):
        pid = old.name.split("-")[2] if old.name.count("-") >= 3 else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f".scratch-{kind}-{os.getpid()}-", dir=root) as tmp:
        yield Path(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or not a pid: leave it
    return True


# Shards of a parallel rebuild: one per core, at least two (the test suite runs it anywhere).
_WORKERS = max(2, min(os.cpu_count() or 1, 4))


def _parallel(size: int, parallel: bool | None) -> bool:
    return parallel if parallel is not None else size >= PARALLEL_FROM


def _key_event(key: SigningKey, role: str, name: str) -> tuple[Event, str]:
    public = base64.b64encode(key.public.raw).decode()
    return KeyRegistered(keyId=key.key_id, publicKey=public, role=role, name=name), key.key_id  # type: ignore[arg-type]


def _default_tolerance() -> tuple[Event, str]:
    """The tolerance policy every log starts with (``projections.tolerance.DEFAULT_POLICY``)."""
    policy = DEFAULT_POLICY
    event = PolicyChanged(
        policy=POLICY_NAME, version=policy.version, parameters=policy.parameters()
    )
    return event, POLICY_NAME


def init_data_dir(
    root: Path, *, origin: str | None = None, clock: Clock = utcnow, store: str | None = None
) -> tuple[Ledger, bool]:
    """Create (or reuse) a data directory: keys (0600), database, and the genesis entries that
    register the index key (self-signed) and the log key, and record the default tolerance
    policy. Idempotent. ``store``: the URL of the log's store (default: the directory's own
    SQLite file, or ``$BENCHPROOF_STORE``); given, it is recorded in the directory (``store``)
    for every later command. A directory that names another store already is pointed at
    ``store`` only when a log is there (copied by ``migrate-store``).

    Returns the open ledger and whether anything was created.

    Raises:
        LogError: the directory holds a log with another origin.
        KeyFileError: an existing key file is unusable.
        MirrorReadOnly: the directory is a mirror (it stays one).
    """
    mirror = read_mirror(root)
    if mirror is not None:
        raise mirror_refusal(
            mirror.origin,
            "`benchproof init` would make it a log of its own; it takes entries only from the "
            "origin (`benchproof import-log`)",
        )
    if origin and not valid_key_name(origin):
        raise UsageError(
            f"invalid origin {origin!r}: it names the log's key, so it must be non-empty UTF-8 "
            "with no spaces and no '+'"
        )
    data = DataDir(root, store)
    data.ensure()
    created = False
    recorded = data.recorded_store()
    url = data.store
    exists = log_exists(url)
    # Where this directory's log was until now: the store it recorded, else its own file.
    previous = recorded or data.own_store
    if not same_store(previous, url) and log_exists(previous):
        # Pointing the directory at another store is for its log copied there whole (by
        # `migrate-store`; its keys are checked against that log's when it opens): a new or an
        # older log there would take a second history signed by the same keys.
        if not exists:
            raise UsageError(
                f"{root} keeps its log in {display_store(previous)}, and {display_store(url)} "
                "holds no log: `benchproof migrate-store` copies a log between stores"
            )
        _check_holds(url, previous, root)
    opened = open_store(
        url, origin=origin if origin else None if exists else DEFAULT_ORIGIN, create=True
    )
    keys = {}
    try:
        for name, path in (("index", data.index_key), ("log", data.log_key)):
            if path.exists():
                keys[name] = load_private_key(path)
            elif opened.size > 0:
                # The log registered the key it held in its entries: a new key would not be one
                # it knows, and every later entry or checkpoint signed with it would fail.
                raise KeyFileError(
                    f"{path} is missing, but the log in {root} holds entries signed with the key "
                    "it held: restore that file (a new key would not be the one the log registered)"
                )
            else:
                keys[name] = generate_key_file(path)
                created = True
    except BaseException:
        opened.close()
        raise
    signers = Signers(keys["index"], keys["log"], opened.origin)
    ledger = Ledger(data, opened, signers, clock)
    if not same_store(url, previous) or (recorded is None and not same_store(url, data.own_store)):
        # Once the log opened with this directory's keys, and before anything is appended:
        # every later command finds it (the URL came from --store or $BENCHPROOF_STORE).
        data.record_store(url)
    if opened.size == 0:
        ledger.append(
            [
                _key_event(keys["index"], "index", "index"),
                _key_event(keys["log"], "log", opened.origin),
                _default_tolerance(),
            ]
        )
        created = True
    elif ledger.projections.position() != opened.size:
        raise LogError("projections are behind the log")
    return ledger, created


def _check_holds(url: str, previous: str, root: Path) -> None:
    """Refuse to point ``root`` at the log at ``url`` unless it holds the whole of the log at
    ``previous`` (the same leaves, so the same root at its size): an older copy would take
    new entries as a second history under the same keys.

    Raises:
        UsageError: it does not.
    """
    with (
        contextlib.closing(open_reader(previous)) as old,
        contextlib.closing(open_reader(url)) as new,
    ):
        size = old.refresh()
        if new.refresh() < size or new.root(size) != old.root(size):
            raise UsageError(
                f"{display_store(url)} does not hold the whole log of {root} ({size} entries in "
                f"{display_store(previous)}): run `benchproof migrate-store` again (it goes on "
                "from where the copy stopped), then point the directory at it"
            )
