"""What every read path takes: the log of one data directory, open (``OpenedLog``). It has two
kinds, and only two: a ``Ledger`` (``service.core.ledger``: a log of its own, with its keys,
that appends and signs) and a ``Mirror`` (``service.core.mirror``: the origin's leaves and
notes, no keys, no appends). A path that writes asks for the ledger (``writer``): a mirror
refuses there, so no code path can reach a signer on a mirror.

A read path sees the same on both: the store, the projections folded up to the log's size,
the keyring of checks made on read-only handles, the clock, the log's verifier key. A class,
not a Protocol: the HTTP edge hands it to handlers as a dependency, which litestar checks
with ``isinstance``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Self

from events.port import Session, stored_entries
from events.stores.sqlbase import SqlLog
from keys import NoteSigner, NoteVerifier
from projections import schema as projection_schema
from projections.materialize import Materializer
from projections.queries import KeyringCache
from service.core import rebuild
from service.core.config import DataDir

if TYPE_CHECKING:
    from pathlib import Path

    from service.core.ledger import Ledger
    from service.core.mirror import MirrorInfo

__all__ = ["Clock", "OpenedLog", "utcnow"]

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


class OpenedLog:
    """The log of one data directory, open for reading, its projections folded up to the log's
    size (``Ledger`` or ``Mirror``: see the module's text)."""

    def __init__(self, data: DataDir, store: SqlLog, clock: Clock) -> None:
        self.data = data
        self.store = store
        self.clock = clock
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

    # --- what a read path asks, answered by each kind ---------------------------------------

    @property
    def mirror(self) -> MirrorInfo | None:
        """The mirror marker (``mirror.json``) of a mirror; None for a log of its own."""
        raise NotImplementedError

    @property
    def vkey(self) -> str:
        """The C2SP verifier key of the log's checkpoints (``<origin>+<keyhash>+<base64>``)."""
        raise NotImplementedError

    @property
    def log_verifier(self) -> NoteVerifier:
        """The verifier of the log's checkpoint notes."""
        raise NotImplementedError

    @property
    def note_signer(self) -> NoteSigner | None:
        """The log key's checkpoint (note) signer; None on a mirror, which holds no keys."""
        raise NotImplementedError

    def writer(self, why: str | None = None) -> Ledger:
        """The ledger that appends to this log and signs for it: this one, if it is a ledger.

        Raises:
            MirrorReadOnly: this is a mirror (saying ``why``, else that it takes no local
                writes).
        """
        raise NotImplementedError

    # --- the projections --------------------------------------------------------------------

    def rebuild_projections(self, *, parallel: bool | None = None, batch_size: int = 4000) -> int:
        """Drop every projection and rebuild it from the whole log, in the caller's transaction
        (which holds the write lock); return the number of entries applied. ``parallel``: as
        ``rebuild_scratch``, whose result then replaces the projections."""
        size = self.store.refresh()
        return rebuild.rebuild_in_place(
            self.projections,
            self.store,
            size,
            db=self._sqlite_file,
            scratch=self.data.root,
            parallel=parallel,
            batch_size=batch_size,
        )

    def rebuild_scratch(
        self, size: int, folder: Path, *, parallel: bool | None = None, batch_size: int = 4000
    ) -> tuple[Session, list[str]]:
        """Rebuild every projection of the first ``size`` entries into scratch databases under
        ``folder``, leaving the live ones as they are; return a connection that reads them and
        the schemas a table's rows come from (``projections.schema.rebuilt_rows``).
        ``parallel``: on every core; by default as ``service.core.rebuild`` decides.

        Raises:
            LogError, LogCorrupted, EventError: as the plain rebuild.
        """
        return rebuild.rebuild_scratch(
            self.store,
            size,
            folder,
            db=self._sqlite_file,
            parallel=parallel,
            batch_size=batch_size,
        )

    def adopt_rebuild(self, rebuilt: Session, schemas: Sequence[str], size: int) -> None:
        """Replace the projections with a scratch rebuild of the first ``size`` entries
        (``rebuild_scratch``), then fold what was appended since, in one transaction under the
        write lock."""
        with self.store.transaction():
            self.projections.replace_with(rebuilt, schemas)
            end = self.store.refresh()
            if end > size:
                self.projections.apply(list(stored_entries(self.store, size, end)))

    @property
    def _sqlite_file(self) -> Path | None:
        """The log's SQLite file, which the workers of a rebuild on every core read (None: the
        store is not one)."""
        return self.data.db if self.data.on_sqlite else None

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

    def _catch_up_if_needed(self) -> None:
        if self.projections.position() != self.store.refresh():
            self._catch_up()

    # --- the handle -------------------------------------------------------------------------

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
