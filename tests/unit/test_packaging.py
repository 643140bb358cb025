"""The project's metadata installs without setuptools' deprecation warnings (issue 17): the
license is an SPDX expression (PEP 639), built by a setuptools that reads it, and the files the
web app serves (templates, static files, the API docs' viewer) are package data."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_license_is_an_spdx_expression() -> None:
    # Ours is Apache-2.0; the API docs' viewer the wheel ships is MIT, with its license file.
    assert PROJECT["project"]["license"] == "Apache-2.0 AND MIT"
    (files,) = PROJECT["project"]["license-files"]
    assert list(ROOT.glob(files)), files
    (setuptools,) = [r for r in PROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    floor = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", setuptools)
    assert floor is not None and int(floor.group(1)) >= 77, setuptools  # PEP 639 support


def test_the_served_files_are_package_data() -> None:
    data = PROJECT["tool"]["setuptools"]["package-data"]["service.web"]
    web = ROOT / "service" / "web"
    for folder in ("templates", "static"):
        assert f"{folder}/**/*" in data
        assert any(p.is_file() for p in (web / folder).rglob("*"))
    assert (web / "static" / "openapi").is_dir()
