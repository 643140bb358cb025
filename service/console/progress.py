"""A progress bar for long commands: drawn on stderr when it is a terminal, silent otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts work done and redraws at most ten times a second."""

    def __init__(
        self, label: str, *, total: int | None = None, stream: TextIO | None = None
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self._last = 0.0
        self._start = time.monotonic()

    def expect(self, total: int) -> None:
        """Set the total once it is known (the bar then fills towards it)."""
        self.total = total

    def note(self, text: str) -> None:
        """A one-line status before the counting starts (a terminal only)."""
        if self.enabled:
            self.stream.write(f"{self.label}: {text}\n")
            self.stream.flush()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._last >= 0.1:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.done / max(now - self._start, 1e-9)
        if self.total:
            width = 30
            filled = int(width * min(self.done / self.total, 1.0))
            bar = "#" * filled + "-" * (width - filled)
            text = f"\r{self.label} [{bar}] {self.done}/{self.total} ({rate:,.0f}/s)"
        else:
            text = f"\r{self.label}: {self.done:,} ({rate:,.0f}/s)"
        self.stream.write(text)
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        if self.enabled and self.done:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
