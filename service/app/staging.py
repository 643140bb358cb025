"""Folders made whole or not at all: built beside their target (on its file system) and renamed
into place (an export's segment, a new mirror's data directory)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from service.errors import UsageError

__all__ = ["fresh_folder", "move_into_place", "staging_folder"]


def fresh_folder(path: Path, what: str) -> Path:
    """``path``, resolved, once it is known to be absent or an empty folder.

    Raises:
        UsageError: it is a file, or a folder that holds something.
    """
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{what} {path} is a file, not a folder")
        if any(path.iterdir()):
            raise UsageError(f"{what} {path} is not empty")
    return path.resolve()


def staging_folder(target: Path, kind: str) -> Path:
    """A fresh folder beside ``target`` (same file system: it is renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.{kind}-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)  # left by an earlier run of this pid, killed midway
    staging.mkdir()
    return staging


def move_into_place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target`` (absent, or an empty folder it replaces).

    Raises:
        UsageError: ``target`` was filled meanwhile.
    """
    try:
        os.replace(staging, target)
    except OSError as exc:
        raise UsageError(f"cannot move the result into {target}: {exc.strerror}") from None
