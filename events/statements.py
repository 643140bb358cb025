"""SQL statements as the code holds them: each written once, in the SQL both stores speak, or
once for each store where they differ, and rendered for each store when it is defined; nothing
is rewritten while it runs.

A statement is written with ``?`` for each parameter (bound in order, never interpolated into
the text) and, where the stores spell a type or an operator in their own way, a *dialect word*
in braces (``WORDS``):

========== ============ ======================= ==============================================
word       SQLite       PostgreSQL              why
========== ============ ======================= ==============================================
integer    INTEGER      BIGINT                  64 bits on both
real       REAL         DOUBLE PRECISION        IEEE 754 doubles on both
blob       BLOB         BYTEA                   bytes
text       TEXT         TEXT COLLATE "C"        text compares and sorts bytewise on both
like       LIKE         ILIKE                   ``LIKE`` that ignores the case of ASCII letters
========== ============ ======================= ==============================================

Where more differs, the statement is written for each store: ``sql(sqlite=..., postgresql=...)``
(one of them alone: a statement only that store sends). A statement's PostgreSQL text is its
text in psycopg's ``format`` parameter style: ``?`` becomes ``%s`` and a literal ``%`` is
doubled (sessions always pass parameters, possibly none, so psycopg reads the text the same way
each time).

A *template* leaves named slots in braces for what is only known when it is sent: ``marks``
(``Statement.marks(n)``: n parameters, for ``IN (...)``), pieces of SQL (``Statement.format``)
or quoted names (``Statement.named``).
What it makes shares the template's record of where it ran.

Every statement the code defines is in ``REGISTRY``; a session that sends one marks that it ran
on its store (``Statement.ran``): ``tests/stores/test_statements.py`` sends each on each store
and fails when one never ran. Define statements at module level (a statement defined inside a
function would join the registry at each call).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Literal

__all__ = [
    "DIALECTS",
    "RAN_ENV",
    "REGISTRY",
    "WORDS",
    "Dialect",
    "Statement",
    "ran",
    "sql",
    "write_ran",
]

Dialect = Literal["sqlite", "postgresql"]
DIALECTS: tuple[Dialect, ...] = ("sqlite", "postgresql")

WORDS: dict[Dialect, dict[str, str]] = {
    "sqlite": {
        "integer": "INTEGER",
        "real": "REAL",
        "blob": "BLOB",
        "text": "TEXT",
        "like": "LIKE",
    },
    "postgresql": {
        "integer": "BIGINT",
        "real": "DOUBLE PRECISION",
        "blob": "BYTEA",
        "text": 'TEXT COLLATE "C"',
        "like": "ILIKE",
    },
}

_WORD = re.compile(r"\{(integer|real|blob|text|like)\}")
_SLOT = re.compile(r"\{([a-z_]+)\}")
_LITERAL_OR_MARK = re.compile(r"'(?:[^']|'')*'|\?")


def _render(text: str, dialect: Dialect) -> str:
    """``text`` (``?`` parameters, dialect words) as ``dialect`` reads it."""
    words = WORDS[dialect]
    text = _WORD.sub(lambda m: words[m.group(1)], text)
    if dialect == "postgresql":
        text = text.replace("%", "%%")
        text = _LITERAL_OR_MARK.sub(lambda m: "%s" if m.group(0) == "?" else m.group(0), text)
    return text


class Statement:
    """One statement in the SQL of each store that sends it (``sqlite``, ``postgresql``: None
    where that store never sends it). ``where`` is the line that defined it; ``ran`` says on
    which stores a session sent it (indexed as ``DIALECTS``)."""

    __slots__ = ("_derived", "postgresql", "ran", "sqlite", "where")

    def __init__(
        self, sqlite: str | None, postgresql: str | None, where: str, ran: list[bool]
    ) -> None:
        self.sqlite = sqlite
        self.postgresql = postgresql
        self.where = where
        self.ran = ran
        self._derived: dict[object, Statement] = {}

    def text(self, dialect: Dialect) -> str:
        """The statement as ``dialect`` reads it.

        Raises:
            LookupError: that store never sends it.
        """
        text = self.sqlite if dialect == "sqlite" else self.postgresql
        if text is None:
            raise LookupError(f"the statement of {self.where} is not written for {dialect}")
        return text

    def format(self, **parts: str) -> Statement:
        """The template with its slots filled by pieces of SQL (``?`` parameters and dialect
        words in them are rendered for each store as the template's own)."""
        if not parts:
            return self

        def fill(text: str | None, dialect: Dialect) -> str | None:
            if text is None:
                return None
            rendered = {name: _render(part, dialect) for name, part in parts.items()}
            return _SLOT.sub(lambda m: rendered.get(m.group(1), m.group(0)), text)

        return Statement(
            fill(self.sqlite, "sqlite"), fill(self.postgresql, "postgresql"), self.where, self.ran
        )

    def named(self, **names: str) -> Statement:
        """The template with its slots filled by names the caller quoted (identifiers, never
        parameters: a ``?`` in one stays a ``?``)."""

        def fill(text: str | None, dialect: Dialect) -> str | None:
            if text is None:
                return None
            quoted = {
                key: value.replace("%", "%%") if dialect == "postgresql" else value
                for key, value in names.items()
            }
            return _SLOT.sub(lambda m: quoted.get(m.group(1), m.group(0)), text)

        return Statement(
            fill(self.sqlite, "sqlite"), fill(self.postgresql, "postgresql"), self.where, self.ran
        )

    def marks(self, count: int) -> Statement:
        """The template with its slot ``marks`` filled by ``count`` parameters (kept: the same
        counts come back)."""
        made = self._derived.get(count)
        if made is None:
            made = self._derived[count] = self.format(marks=",".join("?" * count))
        return made

    def __repr__(self) -> str:
        return f"<Statement of {self.where}: {self.sqlite or self.postgresql!r}>"


REGISTRY: list[Statement] = []
"""Every statement the code defined (``sql``), in the order the modules defined them."""


def sql(
    text: str | None = None, /, *, sqlite: str | None = None, postgresql: str | None = None
) -> Statement:
    """A statement in the SQL both stores speak (``text``), or in each store's own
    (``sqlite``, ``postgresql``; one alone: only that store sends it), registered.

    Raises:
        ValueError: both forms at once, or neither.
    """
    if text is not None:
        if sqlite is not None or postgresql is not None:
            raise ValueError("a statement is written once for both stores, or for each")
        sqlite = postgresql = text
    if sqlite is None and postgresql is None:
        raise ValueError("a statement needs a text")
    caller = sys._getframe(1)
    where = f"{caller.f_globals.get('__name__', '?')}:{caller.f_lineno}"
    statement = Statement(
        None if sqlite is None else _render(sqlite, "sqlite"),
        None if postgresql is None else _render(postgresql, "postgresql"),
        where,
        [False, False],
    )
    REGISTRY.append(statement)
    return statement


def name_of(statement: Statement) -> str:
    """A statement's name in every process: the line that defined it and a digest of its text
    (one line may define several)."""
    text = f"{statement.sqlite}\0{statement.postgresql}".encode()
    return f"{statement.where}#{hashlib.sha256(text).hexdigest()[:8]}"


def ran() -> set[tuple[Dialect, str]]:
    """The statements this process sent: (store, ``name_of`` the statement)."""
    return {
        (dialect, name_of(statement))
        for statement in REGISTRY
        for dialect, sent in zip(DIALECTS, statement.ran, strict=True)
        if sent
    }


RAN_ENV = "BENCHPROOF_STATEMENTS_RAN"
"""With this environment variable naming a folder, each process writes there, as it exits,
which statements it sent (``write_ran``): the test suite's record of every statement run on
each store, the servers and commands it starts included (``tests/statements.py``)."""


def write_ran(folder: Path) -> None:
    """Write ``ran()`` to a file of its own in ``folder`` (one line per statement)."""
    lines = sorted(f"{dialect} {where}\n" for dialect, where in ran())
    if lines:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{os.getpid()}-{id(lines):x}.ran").write_text("".join(lines))


if os.environ.get(RAN_ENV):
    atexit.register(write_ran, Path(os.environ[RAN_ENV]))
