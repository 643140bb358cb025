"""Every SQL statement the stores and the projections send runs in a test on each store.

``make test`` sets ``BENCHPROOF_STATEMENT_COVERAGE=sqlite`` and ``make test-postgres`` sets it to
``postgresql``: each process of the run (the pytest workers, and every server and command a test
starts, through ``events.statements.RAN_ENV``) records which statements it sent, and at the end
the run fails, naming them, when a statement written for that store (``events.statements.
REGISTRY``, every module of ``events`` and ``projections`` imported) never ran. A run of a few
tests (no variable) records nothing. Without the shared corpora (``tests.corpora``: the tests
that read them are skipped) the run is not whole: it lists what never ran and fails on none."""

from __future__ import annotations

import importlib
import os
import pkgutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

COVERAGE_ENV = "BENCHPROOF_STATEMENT_COVERAGE"

NOT_YET = {
    "INSERT INTO p_citations VALUES ({marks}) ON CONFLICT DO NOTHING": "no test appends a "
    "citation.notarized entry yet (nothing in the API appends one)",
    "SELECT run_digest FROM p_waiting WHERE digest = ?": "a run waiting on a manifest that a "
    "later incremental batch brings, in a store whose waiting list was not loaded whole",
}
"""Statements no test sends yet, with why: listed in the run's summary, never failing it."""

ENFORCED = ("sqlite",)
"""The stores whose run fails when a statement never ran. ``make test-postgres`` runs a part of
the suite on PostgreSQL (the contract, the end-to-end scenarios, its own tests): it lists the
statements that part never sends, and fails on none yet."""


def _worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def registered() -> list[Any]:
    """Every statement of ``events`` and ``projections`` (each module imported)."""
    import events
    import projections
    from events.statements import REGISTRY

    for package in (events, projections):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    return list(REGISTRY)


def never_ran(dialect: str, folder: Path) -> list[str]:
    """The statements written for ``dialect`` that no process recorded as sent."""
    from events.statements import name_of

    sent = set()
    for record in folder.glob("*.ran"):
        sent |= {tuple(line.split(" ", 1)) for line in record.read_text().splitlines()}
    return sorted(
        name_of(s)
        for s in registered()
        if (text := s.sqlite if dialect == "sqlite" else s.postgresql) is not None
        and (dialect, name_of(s)) not in sent
        and s.sqlite not in NOT_YET
        and text not in NOT_YET
    )


def pytest_configure(config: pytest.Config) -> None:
    from events.statements import RAN_ENV

    if _worker(config) or os.environ.get(COVERAGE_ENV) not in ("sqlite", "postgresql"):
        return
    os.environ.setdefault(RAN_ENV, tempfile.mkdtemp(prefix="benchproof-statements-"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from events.statements import RAN_ENV, write_ran

    folder = os.environ.get(RAN_ENV)
    dialect = os.environ.get(COVERAGE_ENV)
    if not folder or dialect not in ("sqlite", "postgresql"):
        return
    write_ran(Path(folder))
    if _worker(session.config):
        return
    missing = never_ran(dialect, Path(folder))
    session.config.stash[_MISSING] = (dialect, missing)
    if missing and _enforced(dialect) is None and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _enforced(dialect: str) -> str | None:
    """Why a statement that never ran is not a failure of this run (None: it is one)."""
    from tests.corpora import shared_dir

    if dialect not in ENFORCED:
        return "not enforced on this store yet"
    if not (shared_dir() / "corpora").is_dir():
        return (
            "not enforced: the shared corpora are absent, so the tests that read them were skipped"
        )
    return None


_MISSING = pytest.StashKey[tuple[str, list[str]]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    found = config.stash.get(_MISSING, None)
    if found is None:
        return
    dialect, missing = found
    if missing:
        why = _enforced(dialect)
        terminalreporter.write_line(
            f"{len(missing)} statements written for {dialect} never ran in this run"
            + (f" ({why})" if why else "")
            + ": "
            + ", ".join(missing),
            red=why is None,
        )
    if NOT_YET:
        terminalreporter.write_line(
            f"{len(NOT_YET)} statements no test sends yet: " + "; ".join(NOT_YET.values())
        )
    else:
        terminalreporter.write_line(f"every statement written for {dialect} ran on it")
