"""A real ``benchproof serve`` over a fresh data directory, with an operator token, for every
reliability test (each test file may add its own fixtures on top)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.corpora import shared_file
from tests.servers import run_cli, served

NO_LIMITS = (
    "--limit-key-hour", "0", "--limit-key-day", "0",
    "--limit-address-hour", "0", "--limit-address-day", "0",
)  # fmt: skip


@dataclass(frozen=True)
class Site:
    """A served data directory: its base URL, its folder and an operator token."""

    url: str
    data: Path
    token: str


def prepare(data: Path) -> str:
    """``init`` ``data``, ingest the seed manifest, create an operator token; return it."""
    for args in (
        ("init", "--data", data),
        ("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data),
    ):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
    made = run_cli("token", "create", "reliability", "--data", data)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


@contextlib.contextmanager
def open_site(data: Path, *options: object, limits: bool = False) -> Iterator[Site]:
    """Prepare ``data`` (unless it holds a database already) and serve it with ``options``
    (write limits off unless ``limits``) until the block ends. A data directory served before
    keeps its token in ``data/.reliability-token`` (a test file, not the service's)."""
    saved = data / ".reliability-token"
    if (data / "benchproof.db").exists() and saved.exists():
        token = saved.read_text()
    else:
        token = prepare(data)
        saved.write_text(token)
    with served(data, *options, *(() if limits else NO_LIMITS)) as url:
        yield Site(url, data, token)
