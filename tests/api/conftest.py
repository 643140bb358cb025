"""An app over a small real data directory: the seed run, the KernelIndex examples and a few
synthetic runs in one comparison group (some sharing an alias)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from service.app.ingest import ingest
from service.core.config import Settings
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.web.app import create_app
from service.web.auth import TokenStore
from tests.builders import bundle, ingest_event
from tests.corpora import corpus, shared_file


class Data:
    def __init__(self, root: Path, digests: list[str], token: str) -> None:
        self.root = root
        self.digests = digests
        self.token = token


@pytest.fixture(scope="session")
def data(tmp_path_factory: pytest.TempPathFactory) -> Data:
    root = tmp_path_factory.mktemp("api") / "data"
    ledger, _ = init_data_dir(root)
    with ledger:
        ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
        ingest(
            ledger, "manifest", sorted(corpus("kernelindex-manifests", "examples").glob("*.yaml"))
        )
        digests = []
        for value in (300, 100, 200, 100):
            parts = bundle(
                group=3,
                author=value + len(digests),
                value=value,
                observed=f"2026-02-0{len(digests) + 1}T00:00:00Z",
            )
            shared = (
                ("synthetic:shared-alias",)
                if value == 100
                else ("synthetic:submission/777",)
                if value == 300
                else ()
            )
            ledger.append(
                [
                    (
                        ingest_event(parts, aliases=(f"synthetic:{value}-{len(digests)}", *shared)),
                        parts["run"].digest,
                    )
                ]
            )
            digests.append(parts["run"].digest)
    token = TokenStore(root / "tokens.json").create("tests")
    return Data(root, digests, token)


@pytest.fixture
def client(data: Data) -> Iterator[TestClient]:  # type: ignore[type-arg]
    ledger = Ledger.open(data.root)
    app = create_app(Settings(data=data.root), ledger=ledger)
    try:
        with TestClient(app=app) as test_client:
            yield test_client
    finally:
        ledger.close()
