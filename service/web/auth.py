"""Operator tokens: printed once at creation, kept only as SHA-256 hashes (0600 file)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from events.stores.faults import StorageDamaged
from service.errors import UsageError

__all__ = ["TokenStore"]

PREFIX = "bp_"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    """The hashed operator tokens of a data directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, str]:
        """The hashes and names.

        Raises:
            StorageDamaged: the file is not what ``create`` writes (an object of hashes to
                names); every operator request is refused until it is restored.
        """
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()
        ):
            raise StorageDamaged(
                f"{self.path} is not a token file: restore it from a backup, or remove it and "
                "create the tokens again",
                path=str(self.path),
            )
        return data

    def create(self, name: str) -> str:
        """Make a token for ``name`` and return it (the only time it is shown).

        Raises:
            UsageError: the name is empty or already has a token.
        """
        if not name or len(name) > 100:
            raise UsageError("a token needs a name of 1 to 100 characters")
        tokens = self._load()
        if name in tokens.values():
            raise UsageError(f"a token named {name!r} exists already")
        token = PREFIX + secrets.token_urlsafe(32)
        tokens[_hash(token)] = name
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(tokens, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())  # on disk before it replaces the old file
        os.replace(tmp, self.path)
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)  # and the rename with it
        finally:
            os.close(folder)
        return token

    def check(self, token: str | None) -> str | None:
        """The name of a valid token, else None (constant-time comparison)."""
        if not token:
            return None
        wanted = _hash(token)
        for digest, name in self._load().items():
            if hmac.compare_digest(digest, wanted):
                return name
        return None
