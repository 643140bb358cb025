"""Walking the paths an import names, and recording what was read."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from service.errors import NotFound, UsageError

__all__ = ["SourceFile", "walk"]


class SourceFile:
    """One file of a snapshot: its path, bytes and digest (``sha256:<hex>``)."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        self.data = data
        self.digest = "sha256:" + hashlib.sha256(data).hexdigest()


def walk(paths: Iterable[Path], suffixes: tuple[str, ...]) -> Iterator[SourceFile]:
    """Every file named, and every file under a named folder whose name ends in one of
    ``suffixes`` (sorted, so a snapshot is read in one order).

    Raises:
        NotFound: a path does not exist. UsageError: a folder holds no such file.
    """
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(suffixes))
            if not found:
                raise UsageError(f"{path}: no {'/'.join(suffixes)} file in this folder")
            for p in found:
                yield SourceFile(p, p.read_bytes())
        elif path.is_file():
            yield SourceFile(path, path.read_bytes())
        else:
            raise NotFound(f"{path}: no such file or folder")
