"""The attestation statement: an in-toto Statement v1 whose one subject is the run (by its
digest, named by its permalink) and whose predicate (``Predicate``, the JSON Schema
``PREDICATE_SCHEMA`` served at ``GET /schemas/attestation/v1``) says what the attester found;
and its strict reading, before anything is appended (``service.app.attest``).
"""

from __future__ import annotations

import math
from importlib import resources
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET, Meta, UnsetType

from events.decoding import STATEMENT_TYPE
from events.types.attestations import ATTESTATION_PREDICATE
from service.app.keys import unique_members
from service.errors import UsageError

__all__ = [
    "KINDS",
    "MAX_NOTE_BYTES",
    "MAX_STATEMENT_BYTES",
    "PREDICATE_SCHEMA",
    "InvalidStatement",
    "Kind",
    "Predicate",
    "UnsupportedPredicate",
    "predicate_schema",
    "read_statement",
    "statement_of",
]

Kind = Literal["reproduced", "could-not-reproduce", "environment-note", "regression-observed"]
KINDS: tuple[str, ...] = get_args(Kind)

MAX_NOTE_BYTES = 4096
PREDICATE_SCHEMA = "attestation-v1.schema.json"


class InvalidStatement(UsageError):
    """The payload is not an in-toto Statement v1 whose predicate matches the schema."""


class UnsupportedPredicate(UsageError):
    """The statement's predicate type is not one an attestation entry takes."""


_Short = Annotated[str, Meta(min_length=1, max_length=64)]
_Url = Annotated[str, Meta(max_length=2048)]


class Predicate(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """The attestation predicate (``PREDICATE_SCHEMA``); ``value`` without ``statistic`` means
    the run's primary statistic."""

    kind: Kind
    value: float | UnsetType = UNSET
    unit: _Short | UnsetType = UNSET
    statistic: _Short | UnsetType = UNSET
    environment: dict[str, Any] | UnsetType = UNSET
    evidenceUrls: Annotated[list[_Url], Meta(max_length=16)] | UnsetType = UNSET
    note: str | UnsetType = UNSET


class _Digest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sha256: Annotated[str, Meta(pattern=r"^[0-9a-f]{64}\Z")]


class _Subject(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    digest: _Digest


class _Statement(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename={"type_": "_type"}
):
    type_: str
    subject: list[_Subject]
    predicateType: str
    predicate: msgspec.Raw


_STATEMENT = msgspec.json.Decoder(_Statement)
_PREDICATE = msgspec.json.Decoder(Predicate)


MAX_STATEMENT_BYTES = 47 * 1024
"""The largest statement an attestation may sign (its note is bounded apart, at 4 KiB): in
base64 in its envelope, it still fits a log entry (65,535 bytes, ``events.tiles.MAX_LEAF``)."""


def statement_of(run_digest: str, predicate: dict[str, Any]) -> dict[str, Any]:
    """The in-toto Statement v1 of an attestation about the run ``run_digest``
    (``sha256:<hex>``), whose one subject is the run by its digest, named by its permalink."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": f"/runs/{run_digest}", "digest": {"sha256": run_digest[7:]}}],
        "predicateType": ATTESTATION_PREDICATE,
        "predicate": predicate,
    }


def predicate_schema() -> bytes:
    """The JSON Schema of the attestation predicate, as served."""
    return resources.files("service.app").joinpath("schemas", PREDICATE_SCHEMA).read_bytes()


TIME_UNITS = frozenset({"ns", "us", "µs", "ms", "s"})
"""Units of time: a figure in one of them is a duration, never zero."""


def _check_value(value: float, unit: str | None) -> None:
    """A measured figure has a unit, is finite and not negative, and a duration is not zero.

    Raises:
        InvalidStatement: naming the field (``predicate.value`` or ``predicate.unit``).
    """
    if unit is None:
        raise InvalidStatement(
            "predicate: `value` needs its `unit` (e.g. ns)", field="predicate.unit"
        )
    if not math.isfinite(value) or value < 0:
        raise InvalidStatement(
            f"predicate: `value` must be a finite number, 0 or more, not {value!r}",
            field="predicate.value",
        )
    if value == 0 and unit in TIME_UNITS:
        raise InvalidStatement(
            f"predicate: `value` is a duration in {unit}: more than 0", field="predicate.value"
        )


def read_statement(payload: bytes) -> tuple[str, Predicate]:
    """The subject digest (``sha256:<hex>``) and the predicate of an attestation statement."""
    try:
        unique_members(payload)
        statement = _STATEMENT.decode(payload)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InvalidStatement(f"not an in-toto Statement v1: {exc}") from None
    if statement.type_ != STATEMENT_TYPE:
        raise InvalidStatement(f"_type must be {STATEMENT_TYPE}")
    if statement.predicateType != ATTESTATION_PREDICATE:
        raise UnsupportedPredicate(
            f"predicateType must be {ATTESTATION_PREDICATE}",
            predicateType=statement.predicateType,
        )
    if len(statement.subject) != 1:
        raise InvalidStatement("the statement must have exactly one subject: the run")
    subject = statement.subject[0]
    digest = "sha256:" + subject.digest.sha256
    if subject.name != f"/runs/{digest}":
        raise InvalidStatement(f"the subject's name must be the run's permalink /runs/{digest}")
    try:
        predicate = _PREDICATE.decode(statement.predicate)
    except msgspec.DecodeError as exc:
        raise InvalidStatement(f"predicate: {exc}") from None
    if isinstance(predicate.note, str) and len(predicate.note.encode()) > MAX_NOTE_BYTES:
        raise InvalidStatement(f"predicate: `note` is over {MAX_NOTE_BYTES} bytes of UTF-8")
    if isinstance(predicate.value, float):
        _check_value(predicate.value, predicate.unit if isinstance(predicate.unit, str) else None)
    for url in predicate.evidenceUrls or []:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise InvalidStatement(f"predicate: evidence URL {url!r} is not an https URL")
    return digest, predicate
