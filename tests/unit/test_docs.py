"""The documentation says what the code does: the site's nav lists every page; the command
reference lists every command and option of the CLI's parser, and only those; the HTTP page
lists every route, and only routes; every event tag, every import contract, every shell example
of ``benchproof`` is where the docs say. The Python examples of the docs run apart, through the
root conftest (Sybil); the site's build is checked here too when mkdocs is installed
(``make docs``)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from events.types import EVENT_TYPES
from service.cli import build_parser
from tests.docsite import foreign_loads

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DOCUMENTS = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _nav_pages(node: object) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _nav_pages(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _nav_pages(value)


def test_the_nav_lists_every_page_once() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = list(_nav_pages(config["nav"]))
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(listed) == pages
    assert len(set(listed)) == len(listed), "a page is listed twice"


# --- the command line ---------------------------------------------------------------------------


def _commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every leaf subcommand of ``parser`` (``log proof inclusion`` is one), with its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                    yield from _commands(sub, (*prefix, name))
                else:
                    yield (*prefix, name), sub


def _first_cells(page: Path) -> list[str]:
    """The first cell of each table row of ``page`` that names a command (escaped ``\\|`` kept)."""
    cells = []
    for line in page.read_text().splitlines():
        if line.startswith("| `benchproof "):
            cells.append(re.split(r"(?<!\\)\|", line)[1])
    return cells


COMMON = {"--help", "--data", "--store"}


def _row_names(cell: str, command: tuple[str, ...]) -> bool:
    """Whether the table cell is a row of ``command`` (a cell may name two: ``A``, ``B``)."""
    name = "benchproof " + " ".join(command)
    return any(
        code == name or code.startswith(name + " ") for code in re.findall(r"`([^`]+)`", cell)
    )


def test_the_command_reference_names_every_command_and_option() -> None:
    cells = _first_cells(DOCS / "cli.md")
    missing = []
    for command, sub in _commands(build_parser()):
        rows = [cell for cell in cells if _row_names(cell, command)]
        if not rows:
            missing.append(f"benchproof {' '.join(command)}: no row")
            continue
        options = {o for a in sub._actions for o in a.option_strings if o.startswith("--")}
        for option in sorted(options - COMMON):
            if not any(re.search(re.escape(option) + r"(?![\w-])", row) for row in rows):
                missing.append(f"benchproof {' '.join(command)}: {option}")
    assert not missing, "docs/cli.md lacks:\n" + "\n".join(missing)


def test_every_row_of_the_command_reference_is_a_command() -> None:
    known = {"benchproof " + " ".join(c) for c, _ in _commands(build_parser())}
    groups = {"benchproof log"}  # the row for the whole family: `benchproof log …`
    for cell in _first_cells(DOCS / "cli.md"):
        for code in re.findall(r"`(benchproof [^`]+)`", cell):
            words = code.split()
            named = {" ".join(words[:n]) for n in range(2, len(words) + 1)}
            assert named & (known | groups), f"{code!r} in docs/cli.md is no command"


def _shell_lines() -> Iterator[tuple[Path, str]]:
    """The ``benchproof`` command lines of every ``sh`` block of the README and the docs."""
    for page in DOCUMENTS:
        blocks = re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", page.read_text(), re.M | re.S)
        for block in blocks:
            for line in block.replace("\\\n", " ").splitlines():
                yield page, line


def _invocations(line: str) -> Iterator[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    command: list[str] = []
    for word in [*words, ";"]:
        if word and set(word) <= set(";|&<>"):
            if command and Path(command[0]).name == "benchproof":
                yield command[1:]
            command = []
            if word in (">", "<", ">>"):
                command = ["<redirect>"]
        elif command[:1] == ["<redirect>"]:
            command = ["<after redirect>"]
        else:
            command.append(word)


def test_every_shell_example_is_a_command_the_parser_takes() -> None:
    parser = build_parser()
    checked = 0
    for page, line in _shell_lines():
        for argv in _invocations(line):
            try:
                parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"{page.relative_to(ROOT)}: `benchproof {shlex.join(argv)}` is refused")
            checked += 1
    assert checked >= 9  # the README's tour alone has nine


# --- the HTTP API --------------------------------------------------------------------------------

_SKIPPED = re.compile(r"^/static/|^/schema/(?!openapi\.json$)")


def _route_pattern(path: str) -> re.Pattern[str]:
    """A route's path as a pattern over documented paths: ``{name:path}`` takes any rest (the
    run routes dispatch on it), any other parameter one documented ``{…}``."""
    out = ""
    for part in re.split(r"(\{[^}]+\})", path):
        if part.startswith("{"):
            out += r".+" if part.endswith(":path}") else r"\{[^}/]+\}"
        else:
            out += re.escape(part)
    return re.compile(out + r"\Z")


def _documented() -> list[tuple[str, str]]:
    rows = []
    for line in (DOCS / "http.md").read_text().splitlines():
        found = re.match(r"\| `(GET|POST|PUT|DELETE) (/[^`? ]*)", line)
        if found:
            rows.append((found[1], found[2]))
    return rows


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    from service.core.config import Settings
    from service.core.ledger import init_data_dir
    from service.web.app import create_app

    data = tmp_path_factory.mktemp("docs") / "data"
    ledger, _ = init_data_dir(data)
    try:
        app = create_app(Settings(data=data), ledger=ledger)
        found = [
            (method, route.path)
            for route in app.routes
            for method in sorted(getattr(route, "methods", ()))
            if method not in ("HEAD", "OPTIONS") and not _SKIPPED.match(route.path)
        ]
    finally:
        ledger.close()
    assert found
    return found


def test_the_http_page_lists_every_route(routes: list[tuple[str, str]]) -> None:
    documented = _documented()
    missing = [
        f"{method} {path}"
        for method, path in routes
        if not any(m == method and _route_pattern(path).match(p) for m, p in documented)
    ]
    assert not missing, "docs/http.md lacks: " + ", ".join(missing)


def test_every_row_of_the_http_page_is_a_route(routes: list[tuple[str, str]]) -> None:
    stale = [
        f"{method} {path}"
        for method, path in _documented()
        if not any(m == method and _route_pattern(r).match(path) for m, r in routes)
    ]
    assert not stale, "docs/http.md names what no route takes: " + ", ".join(stale)


# --- formats and rooms --------------------------------------------------------------------------


def test_every_event_tag_has_its_row() -> None:
    page = (DOCS / "formats" / "entries.md").read_text()
    rows = set(re.findall(r"^\| `([a-z]+\.[a-z]+\.v\d+)` \|", page, re.M))
    assert rows == set(EVENT_TYPES), "docs/formats/entries.md's events differ from EVENT_TYPES"


def test_every_import_contract_is_described() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    page = (DOCS / "rooms.md").read_text()
    rows = set(re.findall(r"^\| ([^|`]+?) \|", page, re.M))
    for contract in config["tool"]["importlinter"]["contracts"]:
        name = re.sub(r"\s*\([^)]*\)\s*$", "", contract["name"])  # a trailing citation aside
        assert name in rows, f"docs/rooms.md has no row for the contract {name!r}"


# --- the site -----------------------------------------------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed: `make docs` installs it (the `docs` extra)",
)
def test_the_site_builds_strict_and_loads_nothing_from_another_host(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    pages = list(site.rglob("*.html"))
    assert len(pages) > len(list(DOCS.rglob("*.md")))  # every page, and the 404 page
    assert foreign_loads(site) == []
