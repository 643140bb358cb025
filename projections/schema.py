"""The projection tables. They are derived: ``benchproof replay`` drops and rebuilds them.

Versioned tables carry ``valid_from``/``valid_to``: tree sizes (a version made by the entry at
position ``s`` is visible from size ``s + 1``). A read ``asOf`` size ``p`` takes the row with
``valid_from <= p`` and ``valid_to`` NULL or ``> p``: an index lookup, never a replay.
"""

from __future__ import annotations

from collections.abc import Sequence

from events.port import Session

__all__ = ["NAMES", "TABLES", "create", "drop", "rebuilt_rows"]

_DDL = {
    "p_state": """CREATE TABLE IF NOT EXISTS p_state (
        projection TEXT PRIMARY KEY, position INTEGER NOT NULL)""",
    "p_runs": """CREATE TABLE IF NOT EXISTS p_runs (
        run_digest TEXT NOT NULL, valid_from INTEGER NOT NULL, valid_to INTEGER,
        kind TEXT NOT NULL, group_key TEXT, eligible INTEGER NOT NULL, primary_value REAL,
        direction TEXT NOT NULL, observed_at TEXT NOT NULL, source TEXT NOT NULL,
        evidence_level TEXT NOT NULL, hardware TEXT, status TEXT NOT NULL, view BLOB NOT NULL,
        PRIMARY KEY (run_digest, valid_from))""",
    "p_aliases": """CREATE TABLE IF NOT EXISTS p_aliases (
        alias TEXT NOT NULL, run_digest TEXT NOT NULL, valid_from INTEGER NOT NULL,
        PRIMARY KEY (alias, run_digest))""",
    "p_rowkeys": """CREATE TABLE IF NOT EXISTS p_rowkeys (
        row_key TEXT NOT NULL, run_digest TEXT NOT NULL, valid_from INTEGER NOT NULL,
        PRIMARY KEY (row_key, run_digest))""",
    "p_manifests": """CREATE TABLE IF NOT EXISTS p_manifests (
        digest TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,
        valid_from INTEGER NOT NULL, body BLOB NOT NULL)""",
    "p_waiting": """CREATE TABLE IF NOT EXISTS p_waiting (
        digest TEXT NOT NULL, run_digest TEXT NOT NULL,
        PRIMARY KEY (digest, run_digest))""",
    "p_groups": """CREATE TABLE IF NOT EXISTS p_groups (
        group_key TEXT NOT NULL, valid_from INTEGER NOT NULL, valid_to INTEGER,
        kind TEXT NOT NULL, metric_key TEXT NOT NULL, direction TEXT NOT NULL,
        leader TEXT, best REAL, policy_version TEXT NOT NULL,
        PRIMARY KEY (group_key, valid_from))""",
    "p_leaders": """CREATE TABLE IF NOT EXISTS p_leaders (
        group_key TEXT NOT NULL, run_digest TEXT NOT NULL, previous_run_digest TEXT,
        at TEXT NOT NULL, cause TEXT NOT NULL, policy_version TEXT NOT NULL,
        valid_from INTEGER NOT NULL, valid_to INTEGER, kind TEXT NOT NULL,
        PRIMARY KEY (group_key, run_digest, valid_from))""",
    "p_keys": """CREATE TABLE IF NOT EXISTS p_keys (
        key_id TEXT PRIMARY KEY, role TEXT NOT NULL, name TEXT NOT NULL,
        public_key TEXT NOT NULL, valid_from INTEGER NOT NULL, revoked_at INTEGER,
        revoked_reason TEXT, rotated_to TEXT)""",
    "p_sources": """CREATE TABLE IF NOT EXISTS p_sources (
        source TEXT PRIMARY KEY, name TEXT NOT NULL, url TEXT, license TEXT, notice TEXT,
        valid_from INTEGER NOT NULL)""",
    "p_attestations": """CREATE TABLE IF NOT EXISTS p_attestations (
        id TEXT PRIMARY KEY, run_digest TEXT NOT NULL, attester TEXT NOT NULL,
        predicate_type TEXT NOT NULL, predicate BLOB NOT NULL, valid_from INTEGER NOT NULL,
        recorded_at TEXT NOT NULL, withdrawn_at INTEGER, hidden_at INTEGER, withdrawn_reason TEXT,
        hidden_reason TEXT)
       """,
    "p_signed": """CREATE TABLE IF NOT EXISTS p_signed (
        key_id TEXT NOT NULL, position INTEGER NOT NULL,
        PRIMARY KEY (key_id, position))""",
    "p_signers": """CREATE TABLE IF NOT EXISTS p_signers (
        key_id TEXT PRIMARY KEY, entries INTEGER NOT NULL)""",
    "p_reports": """CREATE TABLE IF NOT EXISTS p_reports (
        id TEXT PRIMARY KEY, run_digest TEXT NOT NULL, category TEXT NOT NULL, text TEXT NOT NULL,
        reporter TEXT, valid_from INTEGER NOT NULL, recorded_at TEXT NOT NULL,
        resolved_at INTEGER, resolution TEXT, note TEXT)""",
    "p_reruns": """CREATE TABLE IF NOT EXISTS p_reruns (
        id TEXT PRIMARY KEY, run_digest TEXT NOT NULL, kind TEXT NOT NULL, actor TEXT NOT NULL,
        valid_from INTEGER NOT NULL, recorded_at TEXT NOT NULL, request_id TEXT, body BLOB NOT NULL)
       """,
    "p_citations": """CREATE TABLE IF NOT EXISTS p_citations (
        id TEXT PRIMARY KEY, run_digest TEXT NOT NULL, permalink TEXT NOT NULL,
        accessed_at TEXT NOT NULL, checkpoint_size INTEGER NOT NULL, valid_from INTEGER NOT NULL)
       """,
    "p_policies": """CREATE TABLE IF NOT EXISTS p_policies (
        policy TEXT NOT NULL, valid_from INTEGER NOT NULL, version TEXT NOT NULL,
        parameters BLOB NOT NULL, PRIMARY KEY (policy, valid_from))""",
}

_INDEXES = [
    "CREATE INDEX IF NOT EXISTS p_runs_group ON p_runs (group_key, primary_value)",
    "CREATE INDEX IF NOT EXISTS p_runs_current_source ON p_runs (source, run_digest) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_runs_current_level ON p_runs (evidence_level, run_digest) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_runs_current_hardware ON p_runs (hardware, run_digest) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_aliases_run ON p_aliases (run_digest)",
    "CREATE INDEX IF NOT EXISTS p_waiting_run ON p_waiting (run_digest)",
    "CREATE INDEX IF NOT EXISTS p_leaders_current ON p_leaders (group_key, at) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_attestations_run ON p_attestations (run_digest, valid_from)",
    "CREATE INDEX IF NOT EXISTS p_reports_run ON p_reports (run_digest, valid_from)",
    "CREATE INDEX IF NOT EXISTS p_reruns_run ON p_reruns (run_digest, valid_from)",
    "CREATE INDEX IF NOT EXISTS p_citations_run ON p_citations (run_digest)",
]

TABLES = tuple(_DDL)
NAMES = TABLES + tuple(ddl.split()[5] for ddl in _INDEXES)
"""Every table and index ``create`` makes (all present: nothing to create)."""


def create(conn: Session, *, indexes: bool = True) -> None:
    """Create every projection table (and, unless told not to, index) that does not exist.

    ``indexes=False``: tables only. A rebuild builds the indexes once at its end (a bulk build
    is faster than maintaining them row by row); a replay's scratch copy never needs them."""
    for ddl in _DDL.values():
        conn.execute(ddl)
    if indexes:
        for ddl in _INDEXES:
            conn.execute(ddl)


def drop(conn: Session) -> None:
    """Drop every projection table (the log's own tables are untouched)."""
    for table in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


# A table rebuilt into several scratch databases (``projections.shards``) is the union of their
# rows, except that a manifest recorded by several shards keeps its first position and a key's
# count of entries signed is the sum of the shards' counts.
_UNION = {
    "p_manifests": "SELECT digest, kind, name, min(valid_from) AS valid_from, body FROM ({u})"
    " GROUP BY digest",
    "p_signers": "SELECT key_id, sum(entries) AS entries FROM ({u}) GROUP BY key_id",
}


def rebuilt_rows(schemas: Sequence[str], table: str) -> str:
    """The SQL that reads ``table`` rebuilt into the databases attached as ``schemas``."""
    union = " UNION ALL ".join(f"SELECT * FROM {s}.{table}" for s in schemas)  # noqa: S608
    return _UNION.get(table, "{u}").format(u=union) if len(schemas) > 1 else union
