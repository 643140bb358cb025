"""What ``benchproof audit`` reports (``AuditReport``: the checks that ran, each failure with
where it was found, the time each phase took) and what it remembers between runs (``--state``:
the last checkpoint this auditor verified)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from service.errors import UsageError
from verifier.tiles import FetchedCheckpoint

__all__ = ["AuditReport", "Failure", "Phase", "Remembered", "load_state", "save_state"]


class Failure(msgspec.Struct, frozen=True, omit_defaults=True):
    """One thing the audit found wrong: which check, what, and where (an entry's position, a
    run's digest and the field that differs)."""

    check: str
    detail: str
    position: int | None = None
    run: str | None = None
    field: str | None = None


class Remembered(msgspec.Struct, frozen=True):
    """What ``--state`` keeps: the last checkpoint this auditor verified."""

    origin: str
    size: int
    root: str  # hex
    note: str  # the signed note, as served


class Phase(msgspec.Struct):
    name: str
    items: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0


class AuditReport(msgspec.Struct):
    server: str
    origin: str
    treeSize: int = 0
    root: str = ""
    previous: Remembered | None = None
    entries: int = 0
    fetched: int = 0
    runsCompared: int = 0
    answersSigned: int = 0
    cosignaturesSeen: int = 0  # signature lines on the checkpoint besides the log's
    witnessesCosigned: list[str] = []  # the witnesses given (--witness-key) whose verified
    phases: list[Phase] = []
    checked: list[str] = []  # the checks that ran (a failed one is also in ``failures``)
    failures: list[Failure] = []

    @property
    def ok(self) -> bool:
        return not self.failures


def load_state(path: Path | None, origin: str) -> Remembered | None:
    """The remembered checkpoint, if the state file exists.

    Raises:
        UsageError: the file is not an audit state, or is of another log.
    """
    if path is None or not path.exists():
        return None
    try:
        state = msgspec.json.decode(path.read_bytes(), type=Remembered)
    except (OSError, msgspec.DecodeError) as exc:
        raise UsageError(f"{path} is not an audit state file: {exc}") from None
    if state.origin != origin:
        raise UsageError(f"{path} remembers the log {state.origin}, not {origin}")
    return state


def save_state(path: Path, fetched: FetchedCheckpoint) -> None:
    state = Remembered(
        fetched.body.origin,
        fetched.body.size,
        fetched.body.root.hex(),
        fetched.checkpoint.note.decode(),
    )
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(state)) + b"\n")
    tmp.replace(path)
