"""Materialising the folds in the projection tables of one connection: in the append
transaction (``apply``, the store's projector), or by replay from position 0 (``rebuild``).

The fold of each batch is a ``projections.batch.Batch``; it reads and writes rows through a
``projections.rows.RowStore``, the only part that speaks SQL.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence

from events.bulk import paused_gc
from events.entries import StoredEntry
from events.errors import LogError
from events.keyring import KeyView
from events.port import Session
from projections import schema
from projections.batch import RUN_SUBJECTS, Batch
from projections.queries import KeyringCache, current_size, stored_format
from projections.rows import RowStore

__all__ = ["FORMAT", "Materializer"]

# The format of what the folds store. Bump it whenever a fold or a table changes what it
# writes: projections written in another format are stale, and the ledger rebuilds them from
# the log when it opens the data directory.
# 2: a run's own manifest is no longer copied into p_manifests.
# 3: p_groups has no member count (a version per leader change, not per member joining).
# 4: a withdrawal applies only when its signer is the attester; hiding and resolving only when
#    an index key signs them; key.granted changes a key's role.
# 5: p_attestations keeps a withdrawal's and a hiding's reasons apart.
# 6: p_state records where the keyring last changed (``keys``); p_signed and p_signers hold
#    who signed each entry.
# 7: reruns are judged by the index (tolerance policy), never by their own flag; v2 reruns;
#    policies only from the index; a rerunner's identity is its registered name.
# 8: a run keeps its protocol's comparability family; rerun requests and claims in its view.
# 9: p_signed is an ordinary (rowid) table, like every other.
# 10: the fields queries filter and sort on are columns (p_runs: name, title, benchmark,
#     workload_digest, operation_digest; p_manifests: title; p_attestations: predicate_kind);
#     text columns hold U+0000 as U+0001 on every store (``projections.columns``).
# 11: current runs are indexed by (workload, hardware, value), for the neighbours query, and
#     keep the search order's key (k_workload, k_unvalued, k_value) in that order's index.
# 12: current eligible runs are indexed by (group, value), for a run's rank in its group; the
#     neighbours index covers the columns its query filters on.
# 13: every version of a run is indexed by (workload, hardware, value), for the neighbours
#     query as of a size.
# 14: a key granted a role keeps the position it holds it from and its role before
#     (p_keys: role_since, role_before), so a history names a signer's role at its entry.
FORMAT = 14


class Materializer:
    """Applies committed entries to the projection tables of one connection."""

    def __init__(self, conn: Session, *, create: bool = True) -> None:
        """``create=False``: the tables and indexes are known to be there (nothing to make)."""
        self.conn = conn
        self.rows = RowStore(conn)
        if create:
            # Tables first: projections of another format are rebuilt (dropped and made again,
            # indexes and all) when the ledger opens, and an index of this format may name a
            # column their tables lack.
            schema.create(conn, indexes=False)
            if not self.stale():
                schema.create(conn)
        self._keyring = KeyringCache()  # follows other writers; dropped by a rollback
        self._carried: Batch | None = None

    def position(self) -> int:
        """The tree size the projections have applied."""
        return current_size(self.conn)

    def stale(self) -> bool:
        """True if the projections hold entries folded in another format than ``FORMAT`` (by
        an older version of the folds): they must be rebuilt from the log."""
        return self.position() > 0 and stored_format(self.conn) != FORMAT

    def apply(self, entries: Sequence[StoredEntry]) -> None:
        """Fold ``entries`` (consecutive, starting at ``position()``) into the projections, in
        the caller's transaction.

        Raises:
            EventError: an entry does not decode.
        """
        if not entries:
            return
        batch = Batch(self.rows, self.keyring())
        if self._carried is not None:
            batch.carry_groups(self._carried)
        try:
            batch.preload(e.subject for e in entries if e.type.startswith(RUN_SUBJECTS))
            for entry in entries:
                batch.apply(entry)
            batch.flush()
        except BaseException:
            self._keyring.forget()  # the caller rolls back; reload next time
            raise
        if batch.keys_changed:  # the fold makes a new mapping when a key changes
            self._keyring.hold(self.conn, batch.keys)
        if self._carried is not None:
            self._carried = batch
        self.rows.set_state(entries[-1].seq + 1, FORMAT)

    def keyring(self) -> Mapping[str, KeyView]:
        """The keyring as the projections hold it: cached, and read again when another writer
        (another process on the same store) changed it since. Never change what it answers."""
        return self._keyring(self.conn)

    def forget(self) -> None:
        """Drop what is cached of the projections (the transaction that folded it was undone)."""
        self._keyring.forget()

    def __call__(self, conn: Session, entries: Sequence[StoredEntry]) -> None:
        """The store's projector hook: ``conn`` is the store's session, which must be this
        materialiser's connection (one transaction holds the entries and their projections).

        Raises:
            LogError: the store hands another session (the projections would commit apart).
        """
        if conn is not self.conn:
            raise LogError("the projections must be written through the log's own session")
        self.apply(entries)

    def rebuild(
        self, entries: Iterable[StoredEntry], *, batch_size: int = 4000, indexes: bool = True
    ) -> int:
        """Drop every projection and replay ``entries`` from position 0 (in the caller's
        transaction). Returns the number of entries applied. ``indexes=False``: leave the
        indexes out (a scratch copy that is only compared)."""
        with paused_gc():
            schema.drop(self.conn)
            # Reads during the rebuild (runs, waiting runs, leaders) use the primary keys;
            # groups are carried from batch to batch, never loaded.
            schema.create(self.conn, indexes=False)
            self._keyring.forget()
            # Nobody else writes while the rebuild runs, so the groups folded by one batch stay
            # true for the next: they are carried over instead of reloaded from the database.
            self._carried = Batch(self.rows, {})
            count = 0
            try:
                for chunk in _chunks(entries, batch_size):
                    self.apply(chunk)
                    count += len(chunk)
                    del chunk
                    gc.collect(1)  # the collector is paused: a batch's cyclic garbage goes here
            finally:
                self._carried = None
            if indexes:
                schema.create(self.conn)
            return count

    def replace_with(self, rebuilt: Session, schemas: Sequence[str]) -> None:
        """Replace every projection with the rebuilt one that ``rebuilt`` reads from its
        attached ``schemas`` (``projections.shards``), in the caller's transaction."""
        schema.drop(self.conn)
        schema.create(self.conn, indexes=False)
        self.rows.copy_rebuilt(rebuilt, schemas)
        schema.create(self.conn)
        self._keyring.forget()


def _chunks(items: Iterable[StoredEntry], size: int) -> Iterator[list[StoredEntry]]:
    chunk: list[StoredEntry] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
