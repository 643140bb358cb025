"""The statements the stores and the projections send (``events.statements.REGISTRY``), as
written for each store: nothing is left for a run-time rewrite to translate.

That each of them runs on each store is the whole run's check (``tests/statements.py``: ``make
test`` on SQLite, ``make test-postgres`` on PostgreSQL)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import events
import projections
from events.statements import REGISTRY, Statement

_LITERAL = re.compile(r"'(?:[^']|'')*'")


def _load_all() -> list[Statement]:
    for package in (events, projections):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            importlib.import_module(info.name)
    return list(REGISTRY)


def test_every_statement_is_written_for_a_store() -> None:
    statements = _load_all()
    assert len(statements) > 100
    for statement in statements:
        assert statement.sqlite is not None or statement.postgresql is not None, statement


def test_no_statement_needs_a_translation() -> None:
    for statement in _load_all():
        for text in (statement.sqlite, statement.postgresql):
            if text is None:
                continue
            bare = _LITERAL.sub("''", text)
            assert "json_extract" not in bare, statement
            assert "{integer}" not in bare and "{text}" not in bare, statement
        if statement.postgresql is not None:
            bare = _LITERAL.sub("''", statement.postgresql)
            assert "?" not in bare, statement
            assert "INSERT OR" not in bare.upper(), statement
            assert "PRAGMA" not in bare.upper(), statement


def test_a_fresh_log_holds_no_run_until_one_is_ingested(tmp_path: Path) -> None:
    """``has_runs`` (what the demo asks before it loads its data) on a real store."""
    from projections.queries import has_runs
    from service.app.ingest import ingest
    from service.core.init import init_data_dir
    from tests.corpora import shared_file

    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        assert not has_runs(ledger.store.session)
        ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
        assert has_runs(ledger.store.session)
