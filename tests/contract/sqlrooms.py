"""``python -m tests.contract.sqlrooms [ROOT]``: SQL in its own rooms (issue 12, DESIGN.md §2).

- SQL on the log tables (``entries``, ``tree_nodes``, ``checkpoints``) is written only by the
  log's store adapters, in ``events/stores/``;
- SQL on the projection tables (``p_*``) is written only in ``projections/``.

A statement is recognised by an upper-case SQL keyword that names a table (``FROM``, ``INTO``,
``UPDATE``, ``JOIN``, ``TABLE``, ``ON``) followed by one of those tables; a table name
interpolated into SQL (``FROM {table}``) is allowed only in the two rooms. Prints each violation
(``path:line: …``) and exits 1 if there is any; ``make lint`` runs it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("events", "keys", "projections", "service")
_KEYWORD = r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE|ON)\s+[\"'`\[]?"
LOG_SQL = re.compile(_KEYWORD + r"(?:main\.)?(entries|tree_nodes|checkpoints)\b")
PROJECTION_SQL = re.compile(_KEYWORD + r"(?:main\.|s\d+\.)?(p_[a-z_]+)\b")
# A table named by interpolation (``f"SELECT * FROM {table}"``) cannot be told apart: only the
# two rooms may do it.
DYNAMIC_SQL = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+\{")
LOG_ROOM = ("events", "stores")
PROJECTION_ROOM = ("projections",)


def _inside(path: Path, room: tuple[str, ...]) -> bool:
    return path.parts[: len(room)] == room


def violations(root: Path) -> Iterator[str]:
    """Every line under ``root``'s packages that writes SQL on a table outside its room."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            text = path.read_text(encoding="utf-8")
            for number, line in enumerate(text.splitlines(), 1):
                found = LOG_SQL.search(line)
                if found and not _inside(relative, LOG_ROOM):
                    yield (
                        f"{relative}:{number}: SQL on the log table {found.group(1)} outside "
                        "events/stores/ (use the log port, events.port)"
                    )
                if DYNAMIC_SQL.search(line) and not (
                    _inside(relative, LOG_ROOM) or _inside(relative, PROJECTION_ROOM)
                ):
                    yield (
                        f"{relative}:{number}: SQL on an interpolated table name outside "
                        "events/stores/ and projections/"
                    )
                found = PROJECTION_SQL.search(line)
                if found and not _inside(relative, PROJECTION_ROOM):
                    yield (
                        f"{relative}:{number}: SQL on the projection table {found.group(1)} "
                        "outside projections/ (add a read to projections.queries)"
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
