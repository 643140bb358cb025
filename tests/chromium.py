"""Debian's Chromium for the browser tests (``/usr/bin/chromium``, or ``BENCHPROOF_CHROMIUM``),
with the flags a closed network needs; the ``browser`` fixture of ``tests/conftest.py``
launches it once per session for every test that shows pages (tests/browser,
tests/reliability)."""

from __future__ import annotations

import os
from pathlib import Path

CHROMIUM = Path(os.environ.get("BENCHPROOF_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
