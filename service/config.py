"""Where things live in a data directory, and the service's settings."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from service.limits import Limits

__all__ = ["DEFAULT_ORIGIN", "DataDir", "Settings"]

DEFAULT_ORIGIN = "benchproof.local/log"


class DataDir:
    """The layout of a data directory: the database, the rate limits' counts, the keys and the
    operator tokens."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def db(self) -> Path:
        return self.root / "benchproof.db"

    @property
    def limits(self) -> Path:
        """The rate limits' counts: a database of their own, so that counting a write never
        waits for the log's writer (``service.limits``)."""
        return self.root / "limits.db"

    @property
    def keys(self) -> Path:
        return self.root / "keys"

    @property
    def index_key(self) -> Path:
        return self.keys / "index.key"

    @property
    def log_key(self) -> Path:
        return self.keys / "log.key"

    @property
    def tokens(self) -> Path:
        return self.root / "tokens.json"

    def ensure(self) -> None:
        """Create the directory (0700) and its keys folder."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.keys.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.keys, 0o700)

    def exists(self) -> bool:
        return self.db.exists()


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What ``create_app`` and the commands need to know. ``limits``: the public writes' rate
    limits; ``trusted_proxies``: the peers whose ``X-Forwarded-For`` names the client."""

    data: Path
    host: str = "127.0.0.1"
    port: int = 8000
    max_body_bytes: int = 64 * 1024 * 1024
    public_url: str = ""
    limits: Limits = msgspec.field(default_factory=Limits)
    trusted_proxies: tuple[str, ...] = ()
