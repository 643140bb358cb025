"""Where things live in a data directory, and the service's settings."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from service.errors import UsageError
from service.shared.limits import Limits

__all__ = ["DEFAULT_ORIGIN", "PUBLIC_URL_ENV", "DataDir", "Settings"]

DEFAULT_ORIGIN = "benchproof.local/log"


STORE_ENV = "BENCHPROOF_STORE"
"""The environment variable that names the store (as ``--store``)."""
PUBLIC_URL_ENV = "BENCHPROOF_PUBLIC_URL"
"""The public address permalinks name: ``serve --public-url``'s default, and ``cite --data``'s."""


class DataDir:
    """The layout of a data directory: the store of the log (by default its SQLite file), the
    rate limits' counts, the keys and the operator tokens.

    The store is a URL (``events.stores.store_kind``): ``store`` when given, else
    ``$BENCHPROOF_STORE``, else the one ``init --store`` recorded in the file ``store``, else
    ``sqlite://`` and the absolute path of ``<root>/benchproof.db``."""

    def __init__(self, root: Path, store: str | None = None) -> None:
        self.root = Path(root)
        self._store = store or None

    @classmethod
    def local(cls, root: Path) -> DataDir:
        """A directory whose log is its own SQLite file, whatever ``$BENCHPROOF_STORE`` or
        ``--store`` name: a copy being made (a backup, a mirror's staging folder)."""
        root = Path(root)
        return cls(root, f"sqlite://{(root / 'benchproof.db').resolve()}")

    @property
    def store(self) -> str:
        """The URL of the log's store (resolved once: a request's reads and challenges ask for
        it, and the recorded one is a file)."""
        if not self._store:
            self._store = os.environ.get(STORE_ENV) or self.recorded_store() or self.own_store
        return self._store

    @property
    def own_store(self) -> str:
        """The directory's own SQLite file, as a store URL (the default store)."""
        return f"sqlite://{(self.root / 'benchproof.db').resolve()}"

    @property
    def store_file(self) -> Path:
        """Where ``init --store URL`` records the store (0600: a URL may hold a password)."""
        return self.root / "store"

    def recorded_store(self) -> str | None:
        """The store ``init`` recorded here (None: none was).

        Raises:
            UsageError: the file is there but cannot be read (taking the default store then
                could start a second log under this directory's keys).
        """
        try:
            text = self.store_file.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"{self.store_file} names this directory's store but cannot be read ({exc}): "
                "restore it, or name the store with --store"
            ) from None
        if not text:
            raise UsageError(
                f"{self.store_file} is empty: restore it, or name the store with --store"
            )
        return text

    def record_store(self, url: str) -> None:
        """Record ``url`` as this directory's store (an atomic replace, mode 0600)."""
        tmp = self.store_file.with_name(f".store.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(url + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.store_file)

    @property
    def on_sqlite(self) -> bool:
        """Whether the log's store is SQLite (a file), rather than a database server."""
        from events.stores import store_kind

        return store_kind(self.store) == "sqlite"

    @property
    def db(self) -> Path:
        """The SQLite file of the log: the store's, when the store is SQLite (else this
        directory's own default file, which then holds nothing)."""
        store = self.store
        if store != self.own_store:
            from events.stores import sqlite_path, store_kind

            if store_kind(store) == "sqlite":
                return sqlite_path(store)
        return self.root / "benchproof.db"

    @property
    def limits(self) -> Path:
        """The rate limits' counts: a database of their own, so that counting a write never
        waits for the log's writer (``service.shared.limits``)."""
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
        """Whether a log was made here: its SQLite file, or (on a database server, which a
        check would have to reach) the index key ``init`` wrote beside the recorded store."""
        if self.on_sqlite:
            return self.db.exists()
        return self.index_key.exists()


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
    writer: str = ""  # the writer process's unix socket (serve --workers N), or in process
