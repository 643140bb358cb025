"""The PostgreSQL store's tables, triggers and role (``events.stores.postgres``).

- The log tables are the SQLite adapter's, in PostgreSQL's types; text compares bytewise
  (``COLLATE "C"``), as SQLite's does.
- Triggers refuse UPDATE, DELETE and TRUNCATE on ``entries``, ``tree_nodes`` and
  ``checkpoints``.
- The role ``benchproof_appender`` may only read and insert into those tables; every session
  acts as it where it can (``events.stores.pg_pool``).
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

import psycopg
from psycopg import errors as pgerrors

from events.statements import sql
from events.stores.pgsql import run
from events.stores.sqlite_schema import SCHEMA_VERSION

__all__ = [
    "APPENDER",
    "act_as_appender",
    "appender_role",
    "create",
    "has_log",
    "set_origin",
    "stored_origin",
    "writer_key",
]

APPENDER = "benchproof_{}_appender"
"""The name of the role every session acts as where it can (SELECT and INSERT on the log tables
only): one per database and schema (``appender_role``), so that a deployment's role gives
nothing on another's log."""


def appender_role(database: str, schema: str) -> str:
    """The appender role of the log in ``schema`` of ``database``."""
    digest = hashlib.sha256(f"{database}\0{schema}".encode()).hexdigest()[:12]
    return APPENDER.format(digest)


_HERE = sql(postgresql="SELECT current_database(), current_schema(), quote_ident(current_schema())")
_HAS_LOG = sql(
    postgresql="SELECT to_regclass(quote_ident(current_schema()) || '.entries') IS NOT NULL"
)
_ORIGIN = sql(postgresql="SELECT value FROM meta WHERE key = 'origin'")
_WRITERS = sql(postgresql="SELECT pg_advisory_xact_lock(?)")
_SET_ORIGIN = sql(
    postgresql="INSERT INTO meta (key, value) VALUES ('origin', ?), ('schema', ?)"
    " ON CONFLICT (key) DO NOTHING"
)
_RESET_ROLE = sql(postgresql="RESET ROLE")
_MAY_CREATE_ROLES = sql(
    postgresql="SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
)
_ROLE_EXISTS = sql(postgresql="SELECT 1 FROM pg_roles WHERE rolname = ?")
_SET_ROLE = sql(postgresql='SET ROLE "{role}"')
_CREATE_ROLE = sql(postgresql='CREATE ROLE "{role}" NOLOGIN')
_GRANTS = [
    sql(postgresql='GRANT USAGE, CREATE ON SCHEMA {schema} TO "{role}"'),
    sql(
        postgresql='GRANT SELECT, INSERT ON entries, tree_nodes, checkpoints, cosignatures TO "{role}"'
    ),
    sql(
        postgresql='REVOKE UPDATE, DELETE, TRUNCATE ON entries, tree_nodes, checkpoints, cosignatures FROM "{role}"'
    ),
    sql(postgresql='GRANT SELECT, INSERT ON meta TO "{role}"'),
]
_GRANT_ROLE = sql(postgresql='GRANT "{role}" TO CURRENT_USER')


def _here(conn: psycopg.Connection[Any]) -> tuple[str, str] | None:
    """The appender role of the session's schema, and that schema quoted (None: the search
    path names no schema that exists)."""
    row = run(conn, _HERE).fetchone()
    if row is None or row[1] is None:
        return None
    return appender_role(str(row[0]), str(row[1])), str(row[2])


def act_as_appender(conn: psycopg.Connection[Any]) -> str | None:
    """Make the session act as its log's appender role, if there is one and this user may;
    return the role (None: the session stays the URL's user)."""
    here = _here(conn)
    if here is None:
        return None
    role = here[0]
    try:
        run(conn, _SET_ROLE.named(role=role))
    except psycopg.Error:
        return None
    return role


_SCHEMA = sql(
    postgresql="""
CREATE TABLE IF NOT EXISTS meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    seq BIGINT PRIMARY KEY,
    recorded_at TEXT COLLATE "C" NOT NULL,
    type TEXT COLLATE "C" NOT NULL,
    subject TEXT COLLATE "C" NOT NULL,
    payload_digest TEXT COLLATE "C" NOT NULL UNIQUE,
    leaf_hash BYTEA NOT NULL,
    leaf BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS tree_nodes (id BIGINT PRIMARY KEY, hash BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (
    size BIGINT PRIMARY KEY,
    root BYTEA NOT NULL,
    signed_at TEXT COLLATE "C" NOT NULL,
    note BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS cosignatures (
    size BIGINT NOT NULL,
    witness TEXT COLLATE "C" NOT NULL,
    key_id BYTEA NOT NULL,
    line TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (size, witness, key_id)
);
CREATE OR REPLACE FUNCTION benchproof_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END $$;
"""
)
_TRIGGERS = """
CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION benchproof_append_only();
CREATE OR REPLACE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION benchproof_append_only();
"""
_LOG_TABLES = ("entries", "tree_nodes", "checkpoints", "cosignatures")
_APPEND_ONLY = [sql(postgresql=_TRIGGERS.format(table=table)) for table in _LOG_TABLES]


def writer_key(schema: str) -> int:
    """The advisory lock of the writers of the log in ``schema`` (signed 64 bits)."""
    digest = hashlib.sha256(b"benchproof-writer\0" + schema.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def has_log(conn: psycopg.Connection[Any]) -> bool:
    # In the schema the log is made in only (not wherever else the search path leads).
    row = run(conn, _HAS_LOG).fetchone()
    return bool(row and row[0])


def stored_origin(conn: psycopg.Connection[Any]) -> str | None:
    if not has_log(conn):
        return None
    row = run(conn, _ORIGIN).fetchone()
    return None if row is None else str(row[0])


def set_origin(conn: psycopg.Connection[Any], key: int, origin: str) -> None:
    with conn.transaction():
        run(conn, _WRITERS, (key,))
        run(conn, _SET_ORIGIN, (origin, str(SCHEMA_VERSION)))


def create(conn: psycopg.Connection[Any], key: int) -> None:
    """The log tables, their triggers and the appender role (idempotent; under the writers'
    lock, so that processes starting together do not race). Run as the URL's own user: the
    tables are its; the appender may only read and insert."""
    run(conn, _RESET_ROLE)
    try:
        with conn.transaction():
            run(conn, _WRITERS, (key,))
            run(conn, _SCHEMA)
            for triggers in _APPEND_ONLY:
                run(conn, triggers)
            _grant(conn)
    finally:
        act_as_appender(conn)


def _grant(conn: psycopg.Connection[Any]) -> None:
    """Make the appender role (when this user may) and give it what it may do here."""
    here = _here(conn)
    assert here is not None  # noqa: S101 - the log's tables were just made in it
    role, quoted = here
    row = run(conn, _MAY_CREATE_ROLES).fetchone()
    exists = run(conn, _ROLE_EXISTS, (role,)).fetchone()
    if exists is None:
        if not (row and row[0]):
            return  # triggers alone keep the log append-only
        # A savepoint: another process may make it first.
        with (
            conn.transaction(),
            contextlib.suppress(pgerrors.DuplicateObject, pgerrors.UniqueViolation),
        ):
            run(conn, _CREATE_ROLE.named(role=role))
    for grant in _GRANTS:
        run(conn, grant.named(role=role, schema=quoted))
    with (
        contextlib.suppress(pgerrors.InsufficientPrivilege, pgerrors.InvalidGrantOperation),
        conn.transaction(),
    ):
        run(conn, _GRANT_ROLE.named(role=role))
