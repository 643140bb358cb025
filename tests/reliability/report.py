"""What the reliability tests measured, for the summary of ``make reliability``.

Tests call the ``record_*`` functions; each appends one JSON line to the file named by
``BENCHPROOF_RELIABILITY_REPORT`` (set by ``python -m tests.reliability``). Without that
variable (a plain ``pytest`` run) they only check their arguments, so a test reads the same
under both. :func:`scale` picks a test's size: the fast one under ``make test``, the issue's
under ``make reliability``."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")

FULL = os.environ.get("BENCHPROOF_RELIABILITY") == "full"
REPORT_ENV = "BENCHPROOF_RELIABILITY_REPORT"


def scale(fast: T, full: T) -> T:
    """``full`` under ``make reliability``, else ``fast``."""
    return full if FULL else fast


def fuzzing(examples: int) -> Any:
    """Hypothesis settings for the hostile-input tests: ``examples`` inputs, reproducible
    (derandomized, no example database), no deadline or health check (each input may be an
    HTTP request to a real server)."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )


def _emit(kind: str, **fields: Any) -> None:
    # The test that recorded it ("tests/reliability/test_x.py::test_y (call)"), so that the
    # runner can tell a test file that recorded nothing.
    test = os.environ.get("PYTEST_CURRENT_TEST", "")
    line = json.dumps({"kind": kind, "test": test, **fields}, sort_keys=True)
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


def record_writes(section: str, *, attempted: int, acknowledged: int, found: int) -> None:
    """Writes a test sent, the ones answered 2xx, and the acknowledged ones found in the log
    exactly once afterwards (``found == acknowledged`` is the requirement)."""
    _emit("writes", section=section, attempted=attempted, acknowledged=acknowledged, found=found)


def record_rounds(section: str, *, rounds: int, survived: int) -> None:
    """Crash or fault rounds run, and those after which every check held."""
    _emit("rounds", section=section, rounds=rounds, survived=survived)


def record_inputs(target: str, *, tried: int, server_errors: int = 0, appends: int = 0) -> None:
    """Hostile inputs sent to one parser or endpoint, the 5xx answers (or crashes) they got,
    and the log entries they appended (both must be 0)."""
    _emit("inputs", target=target, tried=tried, server_errors=server_errors, appends=appends)


def record_server_errors(section: str, count: int) -> None:
    """5xx answers a non-hostile test saw (load, crashes): must be 0."""
    _emit("server_errors", section=section, count=count)


def record_attack(attack: str, got: str, *, ok: bool) -> None:
    """One attack and what it got back (``"401 unauthorized"``, ``"exit 2: …"``); ``ok`` is
    whether that is the refusal the suite expects."""
    _emit("attack", attack=attack, got=got, ok=ok)


def record_table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A small table for the summary (latency percentiles per route, throughput…)."""
    _emit("table", title=title, header=list(header), rows=[list(map(str, r)) for r in rows])


def record_note(section: str, text: str) -> None:
    """One line of figures for the summary."""
    _emit("note", section=section, text=text)
