"""``python -m tests.contract.sqlrooms [ROOT]``: SQL in its own rooms (issue 12, docs/rooms.md).

- SQL on the log tables (``entries``, ``tree_nodes``, ``checkpoints``) is written only by the
  log's store adapters, in ``events/stores/``;
- SQL on the projection tables (``p_*``) is written only in ``projections/``.

The check reads the Python string literals of every module (``tokenize``), joining implicitly
concatenated pieces across lines, and looks in those that read as SQL (a statement verb, in any
case) for a clause that names one of those tables (``FROM``, ``INTO``, ``UPDATE``, ``JOIN``,
``TABLE``, ``ON``, ``table_info(…)``); a table name interpolated into SQL (``FROM {table}``) is
allowed only in the two rooms; and a literal table name used as a sqlite-utils handle
(``db["entries"]``, ``db.table("p_runs")``) counts too. Prints each violation (``path:line: …``)
and exits 1 if there is any; ``make lint`` runs it.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("events", "keys", "projections", "service", "verifier")
LOG_TABLES = r"(entries|tree_nodes|checkpoints)"
PROJECTION_TABLES = r"(p_[a-z_]+)"
_VERB = re.compile(r"\b(select|insert|update|delete|create|drop|pragma|replace|alter)\b", re.I)
_CLAUSE = r"(?:\b(?:from|into|update|join|table|on)\s+[\"'`\[]?(?:main\.|s\d+\.)?|table_info\s*\(\s*[\"']?)"
LOG_SQL = re.compile(_CLAUSE + LOG_TABLES + r"\b", re.I)
PROJECTION_SQL = re.compile(_CLAUSE + PROJECTION_TABLES + r"\b", re.I)
DYNAMIC_SQL = re.compile(r"\b(?:from|into|update|join|table)\s+\{", re.I)
LOG_NAME = re.compile(LOG_TABLES + r"\Z")
PROJECTION_NAME = re.compile(PROJECTION_TABLES + r"\Z")
LOG_ROOM = ("events", "stores")
PROJECTION_ROOM = ("projections",)
_PREFIX = re.compile(r"^[rRbBfFuU]*('''|\"\"\"|'|\")")


def _inside(path: Path, room: tuple[str, ...]) -> bool:
    return path.parts[: len(room)] == room


def _body(token: str) -> str:
    """The text of a string literal, without its prefix and quotes (escapes left as written)."""
    quote = _PREFIX.match(token)
    if quote is None:
        return token
    return token[quote.end() : len(token) - len(quote.group(1))]


def literals(source: str) -> Iterator[tuple[int, str, bool]]:
    """``(line, text, handle)`` of each string literal of ``source``, implicitly concatenated
    pieces joined; ``handle`` says it stands where sqlite-utils takes a table name
    (``db[...]``, ``.table(...)``)."""
    pieces: list[str] = []
    line, handle = 0, False
    before: list[tokenize.TokenInfo] = []
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING:
            if not pieces:
                line = token.start[0]
                last = [t.string for t in before[-2:]]
                handle = last[-1:] == ["["] or last == ["table", "("]
            pieces.append(_body(token.string))
            continue
        if token.type in skip and pieces:
            continue
        if pieces:
            yield line, "".join(pieces), handle
            pieces = []
        if token.type not in skip:
            before = [*before[-1:], token]
    if pieces:
        yield line, "".join(pieces), handle


def violations(root: Path) -> Iterator[str]:
    """Every SQL statement under ``root``'s packages on a table outside its room."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            in_log_room = _inside(relative, LOG_ROOM)
            in_projections = _inside(relative, PROJECTION_ROOM)
            for line, text, handle in literals(path.read_text(encoding="utf-8")):
                sql = _VERB.search(text) is not None
                log = LOG_SQL.search(text) if sql else None
                if handle and LOG_NAME.match(text):
                    log = LOG_NAME.match(text)
                if log and not in_log_room:
                    yield (
                        f"{relative}:{line}: SQL on the log table {log.group(1)} outside "
                        "events/stores/ (use the log port, events.port)"
                    )
                projection = PROJECTION_SQL.search(text) if sql else None
                if handle and PROJECTION_NAME.match(text):
                    projection = PROJECTION_NAME.match(text)
                if projection and not in_projections:
                    yield (
                        f"{relative}:{line}: SQL on the projection table {projection.group(1)} "
                        "outside projections/ (add a read to projections.queries)"
                    )
                if sql and DYNAMIC_SQL.search(text) and not (in_log_room or in_projections):
                    yield (
                        f"{relative}:{line}: SQL on an interpolated table name outside "
                        "events/stores/ and projections/"
                    )


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[2]
    found = list(violations(root))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} SQL statement(s) outside their rooms", file=sys.stderr)
        return 1
    print("SQL in its rooms: log tables only in events/stores/, p_* only in projections/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
