"""Root conftest: runs the Python examples in README.md (Sybil)."""

from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser

pytest_collect_file = Sybil(parsers=[PythonCodeBlockParser()], patterns=["README.md"]).pytest()
