"""Where the shared corpora are, and cached readers for them.

The corpora live beside the checkout (``../shared``; CI's clone has them there too) or where
``BENCHPROOF_SHARED`` points. A test that needs them is skipped with a message saying so when they
are absent, except under ``BENCHPROOF_REQUIRE_CORPORA=1`` (``.ci/run`` sets it), where it fails.
"""

from __future__ import annotations

import collections
import functools
import io
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    return Path(os.environ.get("BENCHPROOF_SHARED", ROOT.parent / "shared")).resolve()


def corpus(*parts: str) -> Path:
    """Path to a file or folder under ``shared/corpora``; skip (or fail in CI) when absent."""
    path = shared_dir().joinpath("corpora", *parts)
    if not path.exists():
        message = (
            f"the shared corpora are absent: {path} does not exist (clone ../shared beside the "
            "checkout, or set BENCHPROOF_SHARED)"
        )
        if os.environ.get("BENCHPROOF_REQUIRE_CORPORA") == "1":
            pytest.fail(message)
        pytest.skip(message, allow_module_level=True)  # also when a module reads them at import
    return path


def shared_file(name: str) -> Path:
    """A file at the top of ``shared`` (seed-manifest.json...), with the same absent-rule."""
    path = shared_dir() / name
    if not path.exists():
        corpus(name)  # skips or fails with the message
    return path


CATALOG = ("kernelindex-catalog-2026-08-16", "catalog-2026-08-16-0022af0b.jsonl.zst")


@functools.cache
def _catalog_tables(path: str) -> dict[str, list[dict[str, Any]]]:
    import zstandard

    decoder = msgspec.json.Decoder()
    tables: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    with open(path, "rb") as fh:
        reader = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(fh))
        for line in reader:
            row = decoder.decode(line)
            tables[row["table"]].append(row["row"])
    return dict(tables)


def catalog_tables() -> dict[str, list[dict[str, Any]]]:
    """Every table of the KernelIndex catalog export, decoded once per test session."""
    return _catalog_tables(str(corpus(*CATALOG)))
