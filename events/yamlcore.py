"""YAML read the way KernelIndex reads it: YAML 1.2 core schema, JSON values only.

KernelIndex parses manifests with the JavaScript ``yaml`` package (YAML 1.2, core schema), so:
- plain scalars resolve only to null, booleans (``true``/``True``/``TRUE``...), integers (decimal,
  ``0o`` octal, ``0x`` hex) and floats (including ``.inf``/``.nan``); ``yes``, ``on``, ``1_000``
  and ``0777``-style YAML 1.1 spellings stay strings;
- timestamps are NOT resolved: ``2026-08-01T12:00:00Z`` stays the string as written, because
  rewriting an instant changes its digest;
- duplicate mapping keys are refused, and ``<<`` is an ordinary key (1.2 has no merge keys);
- mapping keys must be strings (every key in the manifest schemas is), and explicit tags that
  would build non-JSON values (``!!binary``, ``!!timestamp``, ``!!set``...) are refused.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import yaml

from events.errors import InvalidManifest

__all__ = ["load_yaml"]

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _CoreLoader(_Base):  # type: ignore[valid-type,misc]
    """A SafeLoader with YAML 1.2 core-schema resolution and strict mappings."""

    yaml_implicit_resolvers: ClassVar[dict[str | None, list[tuple[str, re.Pattern[str]]]]] = {}
    yaml_constructors: ClassVar[dict[str | None, Any]] = {}

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, "expected a mapping", node.start_mark
            )
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR):
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    "mapping keys must be strings",
                    key_node.start_mark,
                )
            key = key_node.value
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"duplicate key {key!r}",
                    key_node.start_mark,
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _add(tag: str, pattern: re.Pattern[str], first: str) -> None:
    for ch in first:
        _CoreLoader.yaml_implicit_resolvers.setdefault(ch, []).append((tag, pattern))


_add("tag:yaml.org,2002:null", _NULL, "~nN")
_CoreLoader.yaml_implicit_resolvers.setdefault("", []).append(("tag:yaml.org,2002:null", _NULL))
_add("tag:yaml.org,2002:bool", _BOOL, "tTfF")
_add("tag:yaml.org,2002:int", _INT, "-+0123456789")
_add("tag:yaml.org,2002:float", _FLOAT, "-+.0123456789")


def _scalar(loader: _CoreLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))


def _int(loader: _CoreLoader, node: yaml.Node) -> int:
    text = _scalar(loader, node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _float(loader: _CoreLoader, node: yaml.Node) -> float:
    text = _scalar(loader, node).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


def _seq(loader: _CoreLoader, node: yaml.Node) -> list[Any]:
    return loader.construct_sequence(node)  # type: ignore[no-any-return]


_CoreLoader.add_constructor("tag:yaml.org,2002:null", lambda _l, _n: None)
_CoreLoader.add_constructor(
    "tag:yaml.org,2002:bool", lambda loader, n: _scalar(loader, n) in ("true", "True", "TRUE")
)
_CoreLoader.add_constructor("tag:yaml.org,2002:int", _int)
_CoreLoader.add_constructor("tag:yaml.org,2002:float", _float)
_CoreLoader.add_constructor(_STR, _scalar)
_CoreLoader.add_constructor(_SEQ, _seq)
_CoreLoader.add_constructor(_MAP, _CoreLoader.construct_mapping)


def _refuse(_loader: _CoreLoader, node: yaml.Node) -> None:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag} does not make a JSON value", node.start_mark
    )


_CoreLoader.add_constructor(None, _refuse)
_CoreLoader.yaml_multi_constructors = {}


def load_yaml(text: str | bytes, *, source: str = "<yaml>") -> list[Any]:
    """Parse every document of a YAML stream into JSON values.

    Raises:
        InvalidManifest: the text is not YAML, has a duplicate key, a non-string key, or an
            explicit tag outside the JSON types.
    """
    try:
        return list(yaml.load_all(text, Loader=_CoreLoader))
    except yaml.MarkedYAMLError as exc:
        where = f" (line {exc.problem_mark.line + 1})" if exc.problem_mark else ""
        raise InvalidManifest(f"{source}: invalid YAML{where}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise InvalidManifest(f"{source}: invalid YAML: {exc}") from None
