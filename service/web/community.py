"""The run page's community sections (docs/runs.md): attestations as "Replications and notes"
shows them, the commands that add one to this run, and the statement those commands sign. Pure
functions of their arguments (no IO, no clock); ``service.web.sections`` has the run's own
sections.

An attester's name is self-chosen at registration: the page says so, and names the key by id."""

from __future__ import annotations

import shlex
from typing import Any

import msgspec

from projections.queries import Attestation
from service.app.attest import statement_of
from service.app.keylist import KeyRecord
from service.readmodel.dossier import Dossier, Primary
from service.web.present import number, pretty_json, safe_url

__all__ = ["Note", "commands", "note", "notes", "statement"]

# Nanoseconds per duration unit: a measured duration and the run's are shown in the same unit.
_NS_PER = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


class Note(msgspec.Struct, frozen=True):
    """One attestation as the page lists it: its attester's name (None: a key the log does not
    know now) and whether the key chose it itself; ``measured`` its value with its unit and
    statistic, ``reported`` the run's primary value in that unit (when they convert) and
    statistic; ``evidence`` its URLs with the https ones linked."""

    id: str
    kind: str
    attester: str
    attesterName: str | None
    selfNamed: bool
    position: int
    recordedAt: str
    withdrawn: bool
    withdrawalReason: str | None
    measured: str | None
    reported: str | None
    note: str | None
    evidence: list[tuple[str, str | None]]
    environment: str | None


def _in_unit(value: float, unit: str, to: str) -> float | None:
    """``value`` in ``unit`` expressed in ``to`` (None when the units do not convert)."""
    if unit == to:
        return value
    if unit in _NS_PER and to in _NS_PER:
        return value * _NS_PER[unit] / _NS_PER[to]
    return None


def _figures(predicate: dict[str, Any], primary: Primary | None) -> tuple[str | None, str | None]:
    """The attested value and the run's reported primary value, as shown side by side."""
    value = predicate.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, None
    unit = predicate.get("unit")
    statistic = predicate.get("statistic") or (primary.statistic if primary else "")
    measured = " ".join(x for x in (number(value), unit, statistic) if x)
    if primary is None or primary.value is None:
        return measured, None
    shown = _in_unit(primary.value, primary.unit, unit) if unit else None
    reported_unit = unit if shown is not None else primary.unit
    reported = " ".join(
        x
        for x in (
            number(primary.value if shown is None else shown),
            reported_unit,
            primary.statistic,
        )
        if x
    )
    return measured, reported


def notes(d: Dossier, keys: dict[str, KeyRecord]) -> list[Note]:
    """The run's attestations (``d.attestations``, oldest first) as listed, with the attesters'
    ``keys`` by key id."""
    return [note(a, d.primary, keys.get(a.attester)) for a in d.attestations]


def note(a: Attestation, primary: Primary | None, key: KeyRecord | None) -> Note:
    """The attestation ``a`` as listed, beside the run's ``primary`` measurement (None: shown
    alone), signed by ``key``."""
    p = a.predicate
    measured, reported = _figures(p, primary)
    urls = p.get("evidenceUrls")
    environment = p.get("environment")
    return Note(
        id=a.id,
        kind=str(p.get("kind", a.predicateType)),
        attester=a.attester,
        attesterName=key.name if key else None,
        selfNamed=key.nameSelfChosen if key else False,
        position=a.position,
        recordedAt=a.recordedAt,
        withdrawn=a.withdrawn,
        withdrawalReason=a.withdrawalReason,
        measured=measured,
        reported=reported,
        note=str(p["note"]) if "note" in p else None,
        evidence=[(str(u), safe_url(str(u))) for u in urls] if isinstance(urls, list) else [],
        environment=pretty_json(environment) if isinstance(environment, dict) else None,
    )


def statement(d: Dossier) -> dict[str, Any]:
    """The in-toto Statement v1 ``benchproof attest --kind reproduced`` signs about this run,
    before the options add to its predicate."""
    return statement_of(d.runDigest, {"kind": "reproduced"})


def commands(d: Dossier, server: str) -> list[str]:
    """The commands that post a reproduction of this run to ``server`` (this site's base URL),
    ready to copy: make a key, register it, attest. ``VALUE`` and ``NAME`` are the user's."""
    bp = "benchproof"
    where = f"--server {shlex.quote(server)}"
    unit = d.primary.unit if d.primary else ""
    value = "--value VALUE" + (f" --unit {shlex.quote(unit)}" if unit else "")
    return [
        f"{bp} keygen me.key --name NAME",
        f"{bp} keys register --key me.key --name NAME {where}",
        f"{bp} attest {d.shortId} --kind reproduced {value} --key me.key {where}",
        f'{bp} attest {d.shortId} --kind could-not-reproduce --note "what you saw" --key me.key {where}',
    ]
