"""One Benchproof deployment as its users see it: a data directory made by ``benchproof init``
(on a store URL when one is given, else the directory's own SQLite file), the console script
run against it in child processes, and ``benchproof serve`` over it on loopback.

Nothing here reaches into the store or the projections: every step goes through the command
line or HTTP, so the same scenarios run unchanged whichever store holds the log."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.servers import run_cli, served


@dataclass(frozen=True)
class LogState:
    """What ``verify`` and ``replay`` say of a log: its size, its root (lowercase hex) and the
    digest of each projection table as the replay rebuilt it."""

    size: int
    root: str
    digests: dict[str, str]


class Server:
    """A running ``benchproof serve``: its base URL and a few JSON reads."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=30)

    def get(self, path: str, status: int = 200) -> Any:
        """``GET path``, which must answer ``status``; its JSON body."""
        answer = self.http.get(path)
        assert answer.status_code == status, (path, answer.status_code, answer.text)
        return answer.json()

    def size(self) -> int:
        """The log's size now, as the server reads it."""
        return int(self.get("/healthz")["treeSize"])

    def run(self, ref: str) -> dict[str, Any]:
        """The dossier of ``ref`` now."""
        dossier: dict[str, Any] = self.get(f"/v1/runs/{ref}")
        return dossier


class Deployment:
    """A data directory ``root/data`` whose log lives in ``store`` ("" for the directory's own
    SQLite file, else a store URL given to ``init --store``, which records it: later commands
    name only the directory). With ``pinned``, every command names the store (``--store``), for
    a directory whose keys serve a log that another store holds a copy of."""

    def __init__(self, root: Path, store: str, *, pinned: bool = False) -> None:
        self.root = root
        self.data = root / "data"
        self.store = store
        self.pinned = ("--store", store) if pinned else ()

    def init(self) -> str:
        """``benchproof init`` (with ``--store`` when this deployment names one); its output."""
        store = ("--store", self.store) if self.store else ()
        return self.ok("init", *store)

    def cli(self, *args: object, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """``benchproof ARGS… --data DATA`` in a child process."""
        return run_cli(*args, "--data", self.data, *self.pinned, input=input)

    def ok(self, *args: object) -> str:
        """``cli(*args)``, which must exit 0; its standard output."""
        done = self.cli(*args)
        assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
        return done.stdout

    def token(self, name: str) -> str:
        """A new operator token (``benchproof token create``)."""
        return self.ok("token", "create", name).strip().splitlines()[-1]

    def vkey(self) -> Path:
        """The log's vkey (``benchproof log key``) in a file beside the data directory."""
        path = self.root / "log.vkey"
        path.write_text(self.ok("log", "key"))
        return path

    def size(self) -> int:
        """The size of the latest checkpoint (``benchproof log checkpoint``, its second line)."""
        return int(self.ok("log", "checkpoint").splitlines()[1])

    @contextmanager
    def serve(self, *options: object) -> Iterator[Server]:
        """``benchproof serve --data DATA`` until the block ends."""
        with served(self.data, *self.pinned, *options) as url:
            server = Server(url)
            try:
                yield server
            finally:
                server.http.close()

    def state(self) -> LogState:
        """``benchproof verify --json`` and ``benchproof replay --json``, both passing, read as
        a LogState (the plain text of either is read when it takes no ``--json`` yet)."""
        verified = self._json_or_text("verify")
        replayed = self._json_or_text("replay")
        if isinstance(verified, dict):
            size = _first(verified, "entries", "treeSize", "size")
            root = root_hex(str(verified["root"]))
        else:
            found = re.search(r"ok: (\d+) entries verified; root ([0-9a-f]{64})", verified)
            assert found, verified
            size, root = int(found[1]), found[2]
        if isinstance(replayed, dict):
            digests = {str(k): str(v) for k, v in replayed["digests"].items()}
            assert _first(replayed, "entries", "treeSize", "size") == size
        else:
            digests = dict(re.findall(r"^\s+(p_\w+)\s+([0-9a-f]{64})$", replayed, re.MULTILINE))
            assert f"ok: {size} entries replayed" in replayed, replayed
        assert digests, "replay named no projection digests"
        return LogState(size=size, root=root, digests=digests)

    def _json_or_text(self, command: str) -> dict[str, Any] | str:
        done = self.cli(command, "--json")
        if done.returncode == 2 and "unrecognized arguments: --json" in done.stderr:
            return self.ok(command)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        answer: dict[str, Any] = json.loads(done.stdout)
        assert answer.get("ok", True) is True, answer
        return answer


def _first(answer: dict[str, Any], *names: str) -> int:
    """The first of ``names`` that ``answer`` holds, as an integer."""
    for name in names:
        if name in answer:
            return int(answer[name])
    raise AssertionError(f"none of {names} in {sorted(answer)}")


def root_hex(root: str) -> str:
    """A root as lowercase hex, whether written in hex or standard base64."""
    if re.fullmatch(r"[0-9a-f]{64}", root):
        return root
    return base64.b64decode(root, validate=True).hex()
