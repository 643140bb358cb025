"""The progress bar draws on a terminal and stays silent otherwise."""

from __future__ import annotations

import io

from service.console.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_on_a_terminal() -> None:
    stream = _Terminal()
    with Progress("ingest", stream=stream) as bar:
        bar.advance(500)
    assert "ingest: 500" in stream.getvalue()
    assert stream.getvalue().endswith("\n")


def test_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with Progress("ingest", stream=stream, total=10) as bar:
        bar.advance(10)
    assert stream.getvalue() == ""


def test_shows_a_bar_when_the_total_is_known() -> None:
    stream = _Terminal()
    with Progress("verify", stream=stream, total=4) as bar:
        bar.advance(2)
    assert "[" in stream.getvalue() and "2/4" in stream.getvalue()


def test_a_total_learned_later_turns_the_count_into_a_bar() -> None:
    stream = _Terminal()
    with Progress("ingest", stream=stream) as bar:
        bar.note("reading files…")
        bar.expect(8)
        bar.advance(8)
    text = stream.getvalue()
    assert text.startswith("ingest: reading files…\n")
    assert "8/8" in text and "#" * 30 in text


def test_notes_are_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with Progress("ingest", stream=stream) as bar:
        bar.note("reading")
    assert stream.getvalue() == ""
