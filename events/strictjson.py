"""Strict reading of JSON that a client sends: what parsers disagree on is refused.

A JSON object that repeats a member name means one thing to one parser (the first value) and
another to the next (the last); a string holding U+0000 is cut short by every consumer that
treats strings as C strings. Neither has a use in a manifest, an envelope or a request body,
so both are refused, and so is nesting too deep to read."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["check_strict_json"]


def _members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise ValueError(f"duplicate member names: {twice}")
    return dict(pairs)


def check_strict_json(data: bytes | str) -> None:
    """Refuse ``data`` unless it is JSON whose objects never repeat a member name and whose
    strings (member names too) hold no U+0000.

    Raises:
        ValueError: not JSON (a ``json.JSONDecodeError``), nested too deeply to read, a
            repeated member name, or a NUL in a string.
    """
    try:
        value = json.loads(data, object_pairs_hook=_members)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    # JSON can only write U+0000 as the escape ``\u0000`` (a raw control character in a string
    # is refused by the parser): without one, no string holds it, and the walk is skipped.
    escaped = b"\\u0000" in data if isinstance(data, bytes) else "\\u0000" in data
    if not escaped:
        return
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError("a string holds U+0000 (NUL)")
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
