"""The projection tables. They are derived: ``benchproof replay`` drops and rebuilds them.

Versioned tables carry ``valid_from``/``valid_to``: tree sizes (a version made by the entry at
position ``s`` is visible from size ``s + 1``). A read ``asOf`` size ``p`` takes the row with
``valid_from <= p`` and ``valid_to`` NULL or ``> p``: an index lookup, never a replay.
"""

from __future__ import annotations

from collections.abc import Sequence

from events.port import Session
from events.statements import Statement, sql

__all__ = ["NAMES", "TABLES", "create", "drop", "rebuilt_rows"]

# Dialect words (``{text}``, ``{integer}``...): ``events.statements``. The columns a query filters
# or sorts on are columns of their own (name, title, benchmark, workload and operation digests
# of a run, a manifest's title, an attestation's predicate kind), never read out of the stored
# JSON; text columns never hold U+0000 (``projections.columns``).

_DDL = {
    "p_state": """CREATE TABLE IF NOT EXISTS p_state (
        projection {text} PRIMARY KEY, position {integer} NOT NULL)""",
    "p_runs": """CREATE TABLE IF NOT EXISTS p_runs (
        run_digest {text} NOT NULL, valid_from {integer} NOT NULL, valid_to {integer},
        kind {text} NOT NULL, group_key {text}, eligible {integer} NOT NULL, primary_value {real},
        direction {text} NOT NULL, observed_at {text} NOT NULL, source {text} NOT NULL,
        evidence_level {text} NOT NULL, hardware {text}, status {text} NOT NULL, view {blob} NOT NULL,
        name {text} NOT NULL, title {text}, benchmark {text}, workload_digest {text},
        operation_digest {text}, k_workload {text}, k_unvalued {integer} NOT NULL,
        k_value {real} NOT NULL,
        PRIMARY KEY (run_digest, valid_from))""",
    "p_run_sources": """CREATE TABLE IF NOT EXISTS p_run_sources (
        source {text} PRIMARY KEY, runs {integer} NOT NULL)""",
    "p_aliases": """CREATE TABLE IF NOT EXISTS p_aliases (
        alias {text} NOT NULL, run_digest {text} NOT NULL, valid_from {integer} NOT NULL,
        PRIMARY KEY (alias, run_digest))""",
    "p_rowkeys": """CREATE TABLE IF NOT EXISTS p_rowkeys (
        row_key {text} NOT NULL, run_digest {text} NOT NULL, valid_from {integer} NOT NULL,
        PRIMARY KEY (row_key, run_digest))""",
    "p_manifests": """CREATE TABLE IF NOT EXISTS p_manifests (
        digest {text} PRIMARY KEY, kind {text} NOT NULL, name {text} NOT NULL,
        valid_from {integer} NOT NULL, body {blob} NOT NULL, title {text})""",
    "p_waiting": """CREATE TABLE IF NOT EXISTS p_waiting (
        digest {text} NOT NULL, run_digest {text} NOT NULL,
        PRIMARY KEY (digest, run_digest))""",
    "p_groups": """CREATE TABLE IF NOT EXISTS p_groups (
        group_key {text} NOT NULL, valid_from {integer} NOT NULL, valid_to {integer},
        kind {text} NOT NULL, metric_key {text} NOT NULL, direction {text} NOT NULL,
        leader {text}, best {real}, policy_version {text} NOT NULL,
        PRIMARY KEY (group_key, valid_from))""",
    "p_leaders": """CREATE TABLE IF NOT EXISTS p_leaders (
        group_key {text} NOT NULL, run_digest {text} NOT NULL, previous_run_digest {text},
        at {text} NOT NULL, cause {text} NOT NULL, policy_version {text} NOT NULL,
        valid_from {integer} NOT NULL, valid_to {integer}, kind {text} NOT NULL,
        PRIMARY KEY (group_key, run_digest, valid_from))""",
    "p_keys": """CREATE TABLE IF NOT EXISTS p_keys (
        key_id {text} PRIMARY KEY, role {text} NOT NULL, name {text} NOT NULL,
        public_key {text} NOT NULL, valid_from {integer} NOT NULL, revoked_at {integer},
        revoked_reason {text}, rotated_to {text}, role_since {integer}, role_before {text})""",
    "p_sources": """CREATE TABLE IF NOT EXISTS p_sources (
        source {text} PRIMARY KEY, name {text} NOT NULL, url {text}, license {text}, notice {text},
        valid_from {integer} NOT NULL)""",
    "p_attestations": """CREATE TABLE IF NOT EXISTS p_attestations (
        id {text} PRIMARY KEY, run_digest {text} NOT NULL, attester {text} NOT NULL,
        predicate_type {text} NOT NULL, predicate {blob} NOT NULL, valid_from {integer} NOT NULL,
        recorded_at {text} NOT NULL, withdrawn_at {integer}, hidden_at {integer}, withdrawn_reason {text},
        hidden_reason {text}, predicate_kind {text})
       """,
    "p_signed": """CREATE TABLE IF NOT EXISTS p_signed (
        key_id {text} NOT NULL, position {integer} NOT NULL,
        PRIMARY KEY (key_id, position))""",
    "p_signers": """CREATE TABLE IF NOT EXISTS p_signers (
        key_id {text} PRIMARY KEY, entries {integer} NOT NULL)""",
    "p_reports": """CREATE TABLE IF NOT EXISTS p_reports (
        id {text} PRIMARY KEY, run_digest {text} NOT NULL, category {text} NOT NULL, text {text} NOT NULL,
        reporter {text}, valid_from {integer} NOT NULL, recorded_at {text} NOT NULL,
        resolved_at {integer}, resolution {text}, note {text})""",
    "p_reruns": """CREATE TABLE IF NOT EXISTS p_reruns (
        id {text} PRIMARY KEY, run_digest {text} NOT NULL, kind {text} NOT NULL, actor {text} NOT NULL,
        valid_from {integer} NOT NULL, recorded_at {text} NOT NULL, request_id {text}, body {blob} NOT NULL)
       """,
    "p_citations": """CREATE TABLE IF NOT EXISTS p_citations (
        id {text} PRIMARY KEY, run_digest {text} NOT NULL, permalink {text} NOT NULL,
        accessed_at {text} NOT NULL, checkpoint_size {integer} NOT NULL, valid_from {integer} NOT NULL)
       """,
    "p_policies": """CREATE TABLE IF NOT EXISTS p_policies (
        policy {text} NOT NULL, valid_from {integer} NOT NULL, version {text} NOT NULL,
        parameters {blob} NOT NULL, PRIMARY KEY (policy, valid_from))""",
}

# ``p_run_sources`` counts the runs of each source now (a run has one current version), kept
# as the fold runs: the search page names every source with its count, and a count over every
# current run grew with the index (120 ms at 100k runs). An ``asOf`` read counts the versions.
# ``k_workload``, ``k_unvalued`` and ``k_value`` are the search order's key of a current run
# (``projections.queries.search``), kept as the fold runs so that a page of the search reads
# ``p_runs_current_order`` in order and stops at its last run. ``k_workload`` is the run's
# benchmark, else its workload manifest's name as the log holds it now, else its name; it is
# NULL in a closed version (an ``asOf`` search computes the key as of its size instead). The
# index also holds the columns a text matches (name, title, benchmark, operation), so a search
# for a rare text reads the index alone, not the runs' rows: 230 against 45 ms for a text no run
# has at 100k runs. ``p_manifests_operations`` holds the operations a text may name.
# ``p_runs_current_workload`` serves the neighbours query ("better elsewhere": the current runs
# of one workload on one hardware, by value). Without it that query read every current run on
# the hardware, and ``runs show`` grew with the index: 7.3 ms p99 at 10k catalog-shaped runs,
# 17 ms at 20k, 1.2 ms with it (issue 28, docs/benchmarks.md); it also holds the columns the
# query filters on, so that only the rows it answers with are read (100 against 280 us a run at
# 100k). ``p_runs_current_group`` holds what a run's rank in its group reads now (its group's
# current eligible values), covering the query (its filter columns too): through
# ``p_runs_group`` the rank read every member's row, 0.45 ms a run of a catalog group at 100k.
# ``p_runs_workload`` serves the same neighbours query as of a size (every version of the
# workload's runs on the hardware, by value): without it that read scanned every version, 256
# ms a run at 100k runs, and an audit's comparison (``asOf`` its checkpoint) grew with the log.
_INDEXES = [
    "CREATE INDEX IF NOT EXISTS p_runs_group ON p_runs (group_key, primary_value)",
    "CREATE INDEX IF NOT EXISTS p_runs_current_source ON p_runs (source, run_digest) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_runs_current_level ON p_runs (evidence_level, run_digest) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_runs_current_hardware ON p_runs (hardware, run_digest) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_runs_current_group ON p_runs (group_key, primary_value, eligible, valid_to) WHERE valid_to IS NULL AND eligible = 1",
    "CREATE INDEX IF NOT EXISTS p_runs_workload ON p_runs (workload_digest, hardware, primary_value)",
    "CREATE INDEX IF NOT EXISTS p_runs_current_workload ON p_runs (workload_digest, hardware, primary_value, eligible, group_key) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_runs_current_order ON p_runs (k_workload, k_unvalued, k_value, run_digest{covering}) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_manifests_operations ON p_manifests (digest, valid_from, name, title) WHERE kind = 'OperationSpec'",
    "CREATE INDEX IF NOT EXISTS p_aliases_run ON p_aliases (run_digest)",
    "CREATE INDEX IF NOT EXISTS p_waiting_run ON p_waiting (run_digest)",
    "CREATE INDEX IF NOT EXISTS p_leaders_current ON p_leaders (group_key, at) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS p_attestations_run ON p_attestations (run_digest, valid_from)",
    "CREATE INDEX IF NOT EXISTS p_reports_run ON p_reports (run_digest, valid_from)",
    "CREATE INDEX IF NOT EXISTS p_reruns_run ON p_reruns (run_digest, valid_from)",
    "CREATE INDEX IF NOT EXISTS p_citations_run ON p_citations (run_digest)",
]

TABLES = tuple(_DDL)
# On SQLite the search order's index also covers the columns a text matches. PostgreSQL keeps
# it to the key: a B-tree entry there is limited to about 2.7 kB, which long names, titles and
# benchmarks of four-byte characters could pass.
_COVERING = ", name, title, benchmark, operation_digest"
NAMES = TABLES + tuple(ddl.split()[5] for ddl in _INDEXES)
"""Every table and index ``create`` makes (all present: nothing to create)."""

_CREATE = [sql(ddl) for ddl in _DDL.values()]
_CREATE_INDEX = [
    sql(sqlite=ddl.replace("{covering}", _COVERING), postgresql=ddl.replace("{covering}", ""))
    if "{covering}" in ddl
    else sql(ddl)
    for ddl in _INDEXES
]
_DROP = [sql(f"DROP TABLE IF EXISTS {table}") for table in TABLES]
INSERT = {table: sql(f"INSERT INTO {table} VALUES ({{marks}})") for table in TABLES}  # noqa: S608
"""A row of each table (``Statement.marks``: one parameter per column)."""


def create(conn: Session, *, indexes: bool = True) -> None:
    """Create every projection table (and, unless told not to, index) that does not exist.

    ``indexes=False``: tables only. A rebuild builds the indexes once at its end (a bulk build
    is faster than maintaining them row by row); a replay's scratch copy never needs them."""
    for ddl in _CREATE:
        conn.execute(ddl)
    if indexes:
        for ddl in _CREATE_INDEX:
            conn.execute(ddl)


def drop(conn: Session) -> None:
    """Drop every projection table (the log's own tables are untouched)."""
    for ddl in _DROP:
        conn.execute(ddl)


# A table rebuilt into several scratch databases (``projections.shards``: SQLite files attached
# to one connection) is the union of their rows, except that a manifest recorded by several
# shards keeps its first position, and a key's count of entries signed and a source's count of
# runs are the sums of the shards' counts.
_UNION = {
    "p_manifests": "SELECT digest, kind, name, min(valid_from) AS valid_from, body, title"
    " FROM ({union}) GROUP BY digest",
    "p_signers": "SELECT key_id, sum(entries) AS entries FROM ({union}) GROUP BY key_id",
    "p_run_sources": "SELECT source, sum(runs) AS runs FROM ({union}) GROUP BY source",
}
_ONE = {table: sql(sqlite=f"SELECT * FROM {{schema}}.{table}") for table in TABLES}  # noqa: S608
_ALL = {table: sql(sqlite=_UNION.get(table, "{union}")) for table in TABLES}


def rebuilt_rows(schemas: Sequence[str], table: str) -> Statement:
    """The statement that reads ``table`` rebuilt into the SQLite databases attached as
    ``schemas`` (``events.stores.scratch``)."""
    if len(schemas) == 1:
        return _ONE[table].named(schema=schemas[0])
    union = " UNION ALL ".join(f"SELECT * FROM {s}.{table}" for s in schemas)  # noqa: S608
    if table == "p_runs":
        return _runs_rebuilt(schemas, union)
    return _ALL[table].named(union=union)


# A current run's search key without a benchmark names its workload manifest, which another
# shard may have recorded: settled again over every shard's manifests.
_RUN_COLUMNS = (
    "run_digest, valid_from, valid_to, kind, group_key, eligible, primary_value, direction,"
    " observed_at, source, evidence_level, hardware, status, view, name, title, benchmark,"
    " workload_digest, operation_digest"
)


_RUNS_ALL = sql(
    sqlite=f"SELECT {_RUN_COLUMNS}, CASE WHEN r.valid_to IS NULL"  # noqa: S608
    " AND COALESCE(r.benchmark, '') = '' THEN COALESCE((SELECT NULLIF(m.name, '')"
    " FROM ({names}) AS m ORDER BY m.valid_from LIMIT 1), r.name)"
    " ELSE r.k_workload END AS k_workload, r.k_unvalued, r.k_value FROM ({union}) AS r"
)


def _runs_rebuilt(schemas: Sequence[str], union: str) -> Statement:
    """``p_runs`` over the shards, each current run's key settled by the name its workload
    manifest was first recorded with (as ``p_manifests``' union keeps it)."""
    names = " UNION ALL ".join(
        f"SELECT name, valid_from FROM {s}.p_manifests WHERE digest = r.workload_digest"  # noqa: S608
        for s in schemas
    )
    return _RUNS_ALL.named(union=union, names=names)
