"""Root conftest: runs the Python examples of README.md and of every page in docs/ (Sybil)."""

import os
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser

# Every ```python block of these files runs as a test, the blocks of one file in order and in
# one namespace; pyproject.toml's testpaths names README.md and docs.
pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser()], patterns=["README.md", "docs/*.md", "docs/*/*.md"]
).pytest()

POSTGRES_TESTS = Path(__file__).resolve().parent / "tests" / "postgres"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leaves tests/postgres out of a run without a server (``make test``, plain ``pytest``).

    That folder needs the server ``make test-postgres`` starts and names in BENCHPROOF_TEST_PG.
    Named on the command line it is still collected, so that its tests fail and say why.
    """
    if collection_path.resolve() != POSTGRES_TESTS or os.environ.get("BENCHPROOF_TEST_PG"):
        return None
    named = (
        Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args
    )
    return not any(path == POSTGRES_TESTS or POSTGRES_TESTS in path.parents for path in named)
