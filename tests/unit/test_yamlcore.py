"""YAML is read as KernelIndex reads it: YAML 1.2 core schema, instants kept as written."""

from __future__ import annotations

import pytest

from events.errors import InvalidManifest
from events.yamlcore import load_yaml


def test_core_schema_scalars() -> None:
    (doc,) = load_yaml(
        "a: yes\nb: 2026-08-01T12:00:00Z\nc: 0o17\nd: 0x1F\ne: 1.0\nf: ~\ng: True\n"
        "h: 1_000\ni: 0777\nk:\nl: [1, x]\nm: 1e3\nn: 0.000001\no: '5'\np: on\nq: 2026-08-01\n"
    )
    assert doc == {
        "a": "yes",
        "b": "2026-08-01T12:00:00Z",
        "c": 15,
        "d": 31,
        "e": 1.0,
        "f": None,
        "g": True,
        "h": "1_000",
        "i": 777,
        "k": None,
        "l": [1, "x"],
        "m": 1000.0,
        "n": 1e-06,
        "o": "5",
        "p": "on",
        "q": "2026-08-01",
    }


def test_instant_with_fraction_is_kept_as_written() -> None:
    (doc,) = load_yaml("at: 2026-04-14T23:31:59.000Z\n")
    assert doc == {"at": "2026-04-14T23:31:59.000Z"}


def test_merge_key_is_an_ordinary_key() -> None:
    (doc,) = load_yaml("<<: 3\n")
    assert doc == {"<<": 3}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a: 1\na: 2\n", "duplicate key 'a'"),
        ("1: x\n", "mapping keys must be strings"),
        ("a: !!binary aGVsbG8=\n", "does not make a JSON value"),
        ("a: !!timestamp 2020-01-01\n", "does not make a JSON value"),
        ("a: !!python/object:os.system x\n", "does not make a JSON value"),
        ("a: [\n", "invalid YAML"),
    ],
)
def test_refused(text: str, reason: str) -> None:
    with pytest.raises(InvalidManifest, match="invalid YAML") as info:
        load_yaml(text, source="f.yaml")
    assert reason in str(info.value)
    assert str(info.value).startswith("f.yaml: ")


def test_several_documents() -> None:
    assert load_yaml("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
