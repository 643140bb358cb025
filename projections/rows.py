"""The projection rows the fold reads and writes, as SQL: the one place that loads current
state for a batch (run views, waiting runs, a group's state, the keyring) and writes what the
batch gathered (``projections.changes.RowChanges``).

Loads are by primary key or in chunks of 500 digests; writes are one ``executemany`` per
statement, at the end of a batch. Text is written as the text columns hold it
(``projections.columns``).
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import msgspec

from events.port import Session
from events.statements import sql
from projections import schema
from projections.changes import RowChanges
from projections.columns import column_values
from projections.queries import tolerance_policy
from projections.tolerance import TolerancePolicy
from projections.views import GroupView, LeaderChange, Member, RunView

__all__ = ["GroupSpill", "LoadedGroup", "RowStore"]

# One row per name in p_state, replaced (an upsert both stores speak).
_SET_STATE = sql(
    "INSERT INTO p_state VALUES (?, ?)"
    " ON CONFLICT (projection) DO UPDATE SET position = excluded.position"
)
_CURRENT_RUN = sql("SELECT view FROM p_runs WHERE run_digest = ? AND valid_to IS NULL")
_CURRENT_RUNS = sql(
    "SELECT run_digest, view FROM p_runs WHERE valid_to IS NULL AND run_digest IN ({marks})"
)
_WAITING = sql("SELECT digest, run_digest FROM p_waiting")
_WAITING_ON = sql("SELECT run_digest FROM p_waiting WHERE digest = ?")
_HAS_GROUPS = sql("SELECT 1 FROM p_groups LIMIT 1")
_GROUP = sql(
    "SELECT kind, metric_key, direction, best, policy_version FROM p_groups"
    " WHERE group_key = ? AND valid_to IS NULL"
)
_MEMBERS = sql(
    "SELECT observed_at, run_digest, primary_value FROM p_runs"
    " WHERE group_key = ? AND eligible = 1 AND valid_to IS NULL"
)
_LEADERS = sql(
    "SELECT run_digest, previous_run_digest, at, cause, policy_version, valid_from"
    " FROM p_leaders WHERE group_key = ? AND valid_to IS NULL ORDER BY at, run_digest"
)
_CLOSE_RUN = sql(
    "UPDATE p_runs SET valid_to = ?, k_workload = NULL WHERE run_digest = ? AND valid_to IS NULL"
)
_RUN_ROW = sql("INSERT INTO p_runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
# The search key's workload of a current run without a benchmark: its workload manifest's name
# as first recorded, if the log holds it (else its own name). Settled once a batch for the runs
# it wrote a current version of, and for the current runs still waiting on a manifest it
# recorded (a workload may arrive with no new version of a run that waits on it: the same run
# ingested again, carrying it).
_RUN_SOURCES = sql(
    "INSERT INTO p_run_sources VALUES (?, ?) ON CONFLICT (source)"
    " DO UPDATE SET runs = p_run_sources.runs + excluded.runs"
)
_KEY_OF_RUN = sql(
    "UPDATE p_runs SET k_workload = COALESCE((SELECT NULLIF(m.name, '') FROM p_manifests m"
    " WHERE m.digest = p_runs.workload_digest), name)"
    " WHERE run_digest = ? AND valid_to IS NULL AND COALESCE(benchmark, '') = ''"
)
_KEY_OF_WORKLOAD = sql(
    "UPDATE p_runs SET k_workload = COALESCE((SELECT NULLIF(m.name, '') FROM p_manifests m"
    " WHERE m.digest = p_runs.workload_digest), name)"
    " WHERE run_digest IN (SELECT run_digest FROM p_waiting WHERE digest = ?)"
    " AND workload_digest = ? AND valid_to IS NULL AND COALESCE(benchmark, '') = ''"
)
_CLOSE_GROUP = sql("UPDATE p_groups SET valid_to = ? WHERE group_key = ? AND valid_to IS NULL")
_GROUP_ROW = sql("INSERT INTO p_groups VALUES (?,?,?,?,?,?,?,?,?)")
_CLOSE_LEADER = sql(
    "UPDATE p_leaders SET valid_to = ? WHERE group_key = ? AND run_digest = ? AND valid_from = ?"
)
_LEADER_ROW = sql("INSERT INTO p_leaders VALUES (?,?,?,?,?,?,?,?,?)")
_NOT_WAITING = sql("DELETE FROM p_waiting WHERE digest = ? AND run_digest = ?")
_NOW_WAITING = sql("INSERT INTO p_waiting VALUES (?, ?) ON CONFLICT DO NOTHING")
_ALIAS = sql("INSERT INTO p_aliases VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
_SIGNED = sql("INSERT INTO p_signed VALUES (?, ?)")
_SIGNERS = sql(
    "INSERT INTO p_signers VALUES (?, ?)"
    " ON CONFLICT (key_id) DO UPDATE SET entries = p_signers.entries + excluded.entries"
)
_MANIFEST = sql("INSERT INTO p_manifests VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
# ``records.Insert``: a row of one of these tables, kept if its key is there already.
_RECORD = {
    table: sql(f"INSERT INTO {table} VALUES ({{marks}}) ON CONFLICT DO NOTHING")  # noqa: S608
    for table in (
        "p_rowkeys",
        "p_sources",
        "p_attestations",
        "p_reports",
        "p_reruns",
        "p_citations",
        "p_policies",
    )
}
_KEYS = sql(
    "INSERT INTO p_keys VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT (key_id) DO UPDATE SET"
    " role = excluded.role, name = excluded.name, public_key = excluded.public_key,"
    " valid_from = excluded.valid_from, revoked_at = excluded.revoked_at,"
    " revoked_reason = excluded.revoked_reason, rotated_to = excluded.rotated_to,"
    " role_since = excluded.role_since, role_before = excluded.role_before"
)

_ENC = msgspec.json.Encoder()
_RUN = msgspec.json.Decoder(RunView)

# ``records.Update`` statements by name.
_UPDATES = {
    "attestation_withdrawn": sql(
        "UPDATE p_attestations SET withdrawn_at = ?, withdrawn_reason = ?"
        " WHERE id = ? AND attester = ? AND withdrawn_at IS NULL"
    ),
    "attestation_hidden": sql(
        "UPDATE p_attestations SET hidden_at = ?, hidden_reason = ?"
        " WHERE id = ? AND hidden_at IS NULL"
    ),
    "report_resolved": sql(
        "UPDATE p_reports SET resolved_at = ?, resolution = ?, note = ?"
        " WHERE id = ? AND resolved_at IS NULL"
    ),
}


def _texts(rows: Iterable[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [column_values(row) for row in rows]


def _run_row(
    digest: str, valid_from: int, valid_to: int | None, view: RunView
) -> tuple[object, ...]:
    blob = _ENC.encode(view)
    row = (
        digest,
        valid_from,
        valid_to,
        view.kind,
        view.group_key,
        int(view.eligible),
        view.primaryValue,
        view.direction,
        view.observedAt,
        view.source,
        view.evidenceLevel,
        view.hardware,
        view.status,
        blob,
        view.name,
        view.title,
        view.benchmark,
        view.workloadDigest,
        view.operationDigest,
        # The search key (``projections.schema``): the workload is settled in SQL for a run
        # without a benchmark (``_KEY_OF_RUN``); a closed version keeps none.
        None if valid_to is not None else (view.benchmark or view.name),
        1 if view.primaryValue is None else 0,
        0.0
        if view.primaryValue is None
        else -view.primaryValue
        if view.direction == "higher"
        else view.primaryValue,
    )
    # The view's JSON writes a U+0000 in any of its text as the escape (msgspec): without one,
    # no column of the row holds it.
    return column_values(row) if b"\\u0000" in blob else row


class LoadedGroup(msgspec.Struct, frozen=True):
    """A group's current state in the database: its view, its eligible members (walk order)
    and the valid_from of each current leader row, by (run, previous run, at)."""

    view: GroupView
    members: list[Member]
    leader_rows: dict[tuple[str, str | None, str], int]


class RowStore:
    """Reads and writes the projection tables of one connection, in the caller's
    transaction."""

    def __init__(self, conn: Session) -> None:
        self.conn = conn

    # --- loading ---------------------------------------------------------------------------

    def tolerance_policy(self) -> TolerancePolicy:
        """The tolerance policy in force after the rows written so far."""
        return tolerance_policy(self.conn)

    def current_run(self, digest: str) -> RunView | None:
        """The current view of one run, if the database holds it."""
        row = self.conn.execute(_CURRENT_RUN, (digest,)).fetchone()
        return None if row is None else _RUN.decode(row[0])

    def current_runs(self, digests: Sequence[str]) -> Iterator[tuple[str, RunView | None]]:
        """``(digest, current view or None)`` of each of ``digests``, 500 per query."""
        for i in range(0, len(digests), 500):
            chunk = digests[i : i + 500]
            found = {
                digest: body
                for digest, body in self.conn.execute(_CURRENT_RUNS.marks(len(chunk)), chunk)
            }
            for digest in chunk:
                body = found.get(digest)
                yield digest, None if body is None else _RUN.decode(body)

    def waiting(self) -> Iterator[tuple[str, str]]:
        """Every ``(awaited digest, waiting run)``."""
        yield from self.conn.execute(_WAITING)

    def waiting_on(self, digest: str) -> Iterator[str]:
        """The runs waiting on ``digest``."""
        for (run,) in self.conn.execute(_WAITING_ON, (digest,)):
            yield run

    def has_groups(self) -> bool:
        """Whether the database holds any group."""
        return self.conn.execute(_HAS_GROUPS).fetchone() is not None

    def group(self, key: str) -> LoadedGroup | None:
        """The current state of group ``key``, if the database holds it."""
        meta = self.conn.execute(_GROUP, (key,)).fetchone()
        if meta is None:
            return None
        members = sorted(
            Member(obs, digest, value) for obs, digest, value in self.conn.execute(_MEMBERS, (key,))
        )
        rows = self.conn.execute(_LEADERS, (key,)).fetchall()
        history = tuple(LeaderChange(key, r[0], r[2], r[3], r[4], r[1]) for r in rows)
        value_of = {m.runDigest: m.value for m in members}
        values = tuple(value_of[h.runDigest] for h in history)
        view = GroupView(key, meta[1], meta[2], meta[0], history, values, meta[4])
        return LoadedGroup(view, members, {(r[0], r[1], r[2]): r[5] for r in rows})

    # --- writing ---------------------------------------------------------------------------

    def write(self, changes: RowChanges) -> None:
        """Write what a batch gathered."""
        conn = self.conn
        conn.executemany(_CLOSE_RUN, _texts((v, k) for k, v in changes.runs.close_db.items()))
        conn.executemany(
            _RUN_ROW,
            [
                _run_row(digest, valid_from, valid_to, view)
                for digest, versions in changes.runs.rows.items()
                for valid_from, valid_to, view in versions
            ],
        )
        # A run the database held no current version of is new: its source has one more.
        new_runs = Counter(
            versions[-1][2].source
            for digest, versions in changes.runs.rows.items()
            if digest not in changes.runs.close_db
        )
        conn.executemany(_RUN_SOURCES, _texts(sorted(new_runs.items())))
        conn.executemany(_CLOSE_GROUP, _texts((v, k) for k, v in changes.groups.close_db.items()))
        conn.executemany(
            _GROUP_ROW,
            _texts(
                (
                    key,
                    valid_from,
                    valid_to,
                    g.kind,
                    g.metricKey,
                    g.direction,
                    g.leader,
                    g.best,
                    g.policyVersion,
                )
                for key, versions in changes.groups.rows.items()
                for valid_from, valid_to, g in versions
            ),
        )
        conn.executemany(_CLOSE_LEADER, _texts(changes.leaders_closed))
        conn.executemany(_LEADER_ROW, _texts(tuple(r) for r in changes.leaders_new.values()))
        conn.executemany(_NOT_WAITING, _texts(sorted(changes.waiting_del)))
        conn.executemany(_NOW_WAITING, _texts(sorted(changes.waiting_add)))
        conn.executemany(_ALIAS, _texts(changes.aliases))
        if changes.signed:
            conn.executemany(_SIGNED, _texts(changes.signed))
            conn.executemany(
                _SIGNERS, _texts(sorted(Counter(key for key, _ in changes.signed).items()))
            )
        conn.executemany(_MANIFEST, _texts((d, *rest) for d, rest in changes.manifests.items()))
        # Through the runs that wait on each manifest (``p_waiting``'s key): a rebuild, which
        # makes the indexes at its end, must not read every run for each manifest.
        conn.executemany(_KEY_OF_WORKLOAD, _texts((d, d) for d in changes.manifests))
        conn.executemany(
            _KEY_OF_RUN,
            _texts(
                (digest,)
                for digest, versions in changes.runs.rows.items()
                if versions[-1][1] is None and not versions[-1][2].benchmark
            ),
        )
        for table, rows in changes.inserts.items():
            conn.executemany(_RECORD[table].marks(len(rows[0])), _texts(rows))
        for what, rows in changes.updates.items():
            conn.executemany(_UPDATES[what], _texts(rows))
        if changes.keys is not None:
            conn.executemany(
                _KEYS,
                _texts(
                    (
                        k.keyId,
                        k.role,
                        k.name,
                        k.publicKey,
                        k.since,
                        k.until,
                        k.revokedReason,
                        k.rotatedTo,
                        k.roleSince,
                        k.roleBefore,
                    )
                    for k in changes.keys.values()
                ),
            )
            # Where the keyring last changed: readers cache it until this moves
            # (``projections.queries.KeyringCache``).
            conn.execute(_SET_STATE, ("keys", changes.keys_at))

    def set_state(self, position: int, format_: int) -> None:
        """Record that the projections have applied ``position`` entries, folded in format
        ``format_`` (the rows ``projections.queries.current_size`` and ``stored_format`` read)."""
        self.conn.executemany(_SET_STATE, [("all", position), ("format", format_)])

    def copy_rebuilt(self, rebuilt: Session, schemas: Sequence[str]) -> None:
        """Copy every projection table that ``rebuilt`` reads from its attached ``schemas``
        (``schema.rebuilt_rows``) into this connection's (empty) tables."""
        for table in schema.TABLES:
            rows = rebuilt.execute(schema.rebuilt_rows(schemas, table))
            self.conn.executemany(schema.INSERT[table].marks(len(rows.description)), rows)


_SPILL_TABLE = sql(
    sqlite="CREATE TEMP TABLE IF NOT EXISTS spilled_groups (key TEXT PRIMARY KEY, state BLOB)"
)
_SPILL_PUT = sql(sqlite="INSERT OR REPLACE INTO spilled_groups VALUES (?, ?)")
_SPILL_TAKE = sql(sqlite="SELECT state FROM spilled_groups WHERE key = ?")
_SpilledGroup = tuple[GroupView, list[Member], dict[tuple[str, str | None, str], int], bool]


class GroupSpill:
    """Where a rebuild keeps the groups a batch did not carry in memory (``carry_groups``),
    when its database cannot give them back (the groups' scratch database of a rebuild on every
    core holds no runs): a temporary table of their pickled state."""

    def __init__(self, conn: Session) -> None:
        self.conn = conn
        conn.execute(_SPILL_TABLE)

    def put(self, groups: Iterable[tuple[str, _SpilledGroup]]) -> None:
        """Keep each group's state (view, members, leader rows, held in the database)."""
        self.conn.executemany(
            _SPILL_PUT,
            ((k, pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)) for k, v in groups),
        )

    def take(self, key: str) -> _SpilledGroup | None:
        """The state kept for group ``key``, if any (a batch then holds it again)."""
        row = self.conn.execute(_SPILL_TAKE, (key,)).fetchone()
        return None if row is None else pickle.loads(row[0])  # noqa: S301 - our own rows
