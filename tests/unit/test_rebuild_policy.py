"""The one parallel-rebuild policy (``service.core.rebuild``): a ledger's rebuild in place,
``benchproof replay`` and ``benchproof audit``'s replay of a fetched log decide alike when a
rebuild runs on every core and with how many workers, and fold the same tables; no other module
of the service decides it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from keys import parse_vkey
from projections import schema
from projections.compare import table_digest
from service.app.auditreplay import replay_leaves
from service.app.auditreport import AuditReport
from service.app.replay import replay
from service.app.segment import export
from service.core import rebuild
from service.core.ledger import Ledger
from tests.mirrors import build_origin
from verifier.tiles import DirSource, fetch_checkpoint

ROOT = Path(__file__).resolve().parent.parent.parent
SHARDED = "projections.shards"


class Spied:
    """Each rebuild on every core that the policy starts: (entries, workers)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[int, int]] = []
        real = rebuild.rebuild_sharded

        def spy(db: Path, size: int, folder: Path, *, workers: int, batch: int) -> Any:
            self.calls.append((size, workers))
            return real(db, size, folder, workers=workers, batch=batch)

        monkeypatch.setattr(rebuild, "rebuild_sharded", spy)

    def take(self) -> list[tuple[int, int]]:
        calls, self.calls = self.calls, []
        return calls


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """A small signed log, and a segment of it in the tlog-tiles layout (what audit reads)."""
    folder = tmp_path_factory.mktemp("policy")
    built = build_origin(folder / "origin", runs=30)
    export(built.root, folder / "segment")
    return built.root, built.vkey, folder / "segment"


def _tables(session: Any) -> dict[str, str]:
    return {table: table_digest(session, table) for table in schema.TABLES}


@pytest.mark.parametrize("every_core", [True, False], ids=["on-every-core", "in-one-process"])
def test_ledger_replay_and_audit_decide_alike(
    origin: tuple[Path, str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    every_core: bool,
) -> None:
    root, vkey, segment = origin
    with Ledger.open(root) as ledger:
        size = ledger.store.size
        incremental = _tables(ledger.store.session)
        # The threshold is the policy's own: every caller reads it there, at the time it asks.
        monkeypatch.setattr(rebuild, "PARALLEL_FROM", 1 if every_core else size + 1)
        spied = Spied(monkeypatch)
        expected = [(size, rebuild.WORKERS)] if every_core else []

        with ledger.store.transaction():
            assert ledger.rebuild_projections() == size
        assert spied.take() == expected, "the ledger's rebuild in place"
        assert _tables(ledger.store.session) == incremental

        report = replay(ledger)
        assert spied.take() == expected, "benchproof replay"
        assert report.ok and report.digests == incremental

    source = DirSource(segment)
    fetched = fetch_checkpoint(source, parse_vkey(vkey))
    assert fetched.body.size == size
    audit = AuditReport("http://origin.invalid", fetched.body.origin)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    store = replay_leaves(audit, source, fetched, tmp_path / "cache", scratch, None)
    assert store is not None, audit.failures
    try:
        assert spied.take() == expected, "benchproof audit's replay"
        assert _tables(store.session) == incremental
    finally:
        store.close()


def test_the_default_threshold_and_workers() -> None:
    assert not rebuild.on_every_core(rebuild.PARALLEL_FROM - 1)
    assert rebuild.on_every_core(rebuild.PARALLEL_FROM)
    assert rebuild.on_every_core(1, parallel=True) and not rebuild.on_every_core(10**9, False)
    assert 2 <= rebuild.WORKERS <= 4


def test_no_other_module_of_the_service_decides() -> None:
    """Only the policy starts a rebuild on every core, or names a threshold for it."""
    starters, thresholds = [], []
    for path in sorted((ROOT / "service").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and SHARDED in _imported(node):
                starters.append(name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "PARALLEL_FROM" for t in targets):
                    thresholds.append(name)
    assert starters == ["service/core/rebuild.py"]
    assert thresholds == ["service/core/rebuild.py"]


def _imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The modules (and names, as ``module.name``) an import statement brings in."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    module = node.module or ""
    return {module} | {f"{module}.{a.name}" for a in node.names}
