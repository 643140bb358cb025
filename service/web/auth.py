"""Operator tokens: printed once at creation, kept only as SHA-256 hashes (0600 file)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

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
        if not self.path.exists():
            return {}
        data: dict[str, str] = json.loads(self.path.read_text())
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
        os.replace(tmp, self.path)
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
