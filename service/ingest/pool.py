"""Checking an import's manifests on every core.

The costly part of reading a source is checking its manifests: strict decoding against the
schema, normalising, the canonical bytes and the spec digest (``events.check_manifest_text``).
``CheckPool`` splits the texts an importer found into one share per core, checks one share in
the importing process and forks a worker process for each other. A worker hands back bytes,
not pickled objects: one MessagePack array of answers (``CheckedText``: kind, digest, name
and the normalised JSON text, or a refusal's message and place) written to a pipe.

Why forked workers and a pipe rather than a process pool: a pool's feeder and result threads
need the GIL that the importer's reading loop holds, so on two cores the workers starved and
the parse got slower, not faster (docs/benchmarks.md). A forked worker already holds its
share, so nothing is sent to it at all.

The importer stays in charge of order and of what the answers mean: it submits the texts as
it reads them and asks for each one's answer when it builds the plan (``result``). Signing and
appending stay in the importing process, in the log's order. A small import (or a one-core
machine) is checked in the importing process alone.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal

import msgspec

from events.bulk import cores
from events.documents import Checked, CheckedText, check_manifest_text
from events.errors import InvalidManifest

__all__ = ["MIN_SHARE", "CheckPool"]

MIN_SHARE = 500
"""The fewest manifest texts worth a worker process of their own (a fork and a pipe cost about
what checking a few dozen manifests does)."""


class _Refused(msgspec.Struct, frozen=True, array_like=True, tag=1):
    """A manifest that failed its check: the message, and the place it names."""

    detail: str
    path: str


_Answer = CheckedText | _Refused
_ANSWERS = msgspec.msgpack.Decoder(list[CheckedText | _Refused])
_ENCODE = msgspec.msgpack.Encoder()


class CheckPool:
    """Manifest texts checked on every core (``processes``, default one per core), each text
    once. ``submit`` texts as they are found; ``result`` gives each one's answer.

    At the first ``result`` the texts submitted so far are split into one contiguous share per
    process: this process checks the first share itself, and forks a worker for each other
    share. A forked worker already holds the texts (the fork copies nothing until written), so
    nothing is sent to it; it writes its answers to a pipe as one MessagePack array of bytes
    and exits. A worker that dies or answers short has its share checked here instead, so a
    lost worker costs time, never an answer. With ``processes`` <= 1 every check runs here.
    """

    def __init__(self, source: str, *, processes: int | None = None) -> None:
        self.source = source
        self.processes = cores() if processes is None else processes
        self._waiting: list[tuple[bytes, str]] = []
        self._answers: dict[bytes, _Answer] = {}
        self._sent: set[bytes] = set()

    def submit(self, text: bytes, path: str) -> None:
        """Have ``text`` checked (``path`` names it in a refusal); a text submitted before is
        not checked again."""
        if text not in self._sent:
            self._sent.add(text)
            self._waiting.append((text, path))

    def _check_waiting(self) -> None:
        items, self._waiting = self._waiting, []
        if not items:
            return
        workers = min(self.processes, max(1, len(items) // MIN_SHARE))
        size = -(-len(items) // workers)
        shares = [items[i : i + size] for i in range(0, len(items), size)]
        forked: list[tuple[list[tuple[bytes, str]], _Child | None]] = []
        try:
            # Forked only from here: a ``gc.freeze`` keeps the importer's objects out of the
            # workers' collections (a collection would touch, and so copy, every page).
            gc.freeze()
            forked = [(share, _fork(share, self.source)) for share in shares[1:]]
            answers = [_check_here(text, self.source, path) for text, path in shares[0]]
            self._answers.update(zip((text for text, _ in shares[0]), answers, strict=True))
            for share, child in forked:
                got = _answers_of(child)
                if got is None or len(got) != len(share):  # the worker died: checked here
                    got = [_check_here(text, self.source, path) for text, path in share]
                self._answers.update(zip((text for text, _ in share), got, strict=True))
        finally:
            gc.unfreeze()
            for _, child in forked:  # only after a failure here: stop and reap what is left
                _stop(child)

    def result(self, text: bytes, path: str) -> Checked:
        """The checked manifest of ``text``.

        Raises:
            InvalidManifest: the manifest is invalid; the message names ``path`` (the place
                this occurrence of the text is at).
        """
        answer = self._answers.get(text)
        if answer is None and self._waiting:
            self._check_waiting()
            answer = self._answers.get(text)
        if answer is None:
            answer = _check_here(text, self.source, path)
            self._answers[text] = answer
        if isinstance(answer, _Refused):
            # Checked where the text was first found; this occurrence is checked again so that
            # the refusal names its own place (refusals are rare).
            answer = _check_here(text, self.source, path)
            assert isinstance(answer, _Refused)  # noqa: S101 - the same check, the same text
            raise InvalidManifest(answer.detail, path=answer.path)
        return answer.checked()


class _Child:
    """A forked worker: its process id, and the read end of its pipe (-1 once read)."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.reaped = False


def _fork(share: list[tuple[bytes, str]], source: str) -> _Child | None:
    """A worker process checking ``share``, its answers on the pipe it returns (None: no
    process could be started; the share is then checked here)."""
    try:
        read, write = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # the worker: check, write, exit without running the importer's cleanup
        code = 1
        try:
            # A terminal's Ctrl-C or a service manager's SIGTERM stops the worker too (the
            # server's handlers, inherited, would only set a flag nobody here reads).
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(read)
            blob = _ENCODE.encode([_check_here(text, source, path) for text, path in share])
            view = memoryview(blob)
            while view:
                view = view[os.write(write, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return _Child(pid, read)


def _answers_of(child: _Child | None) -> list[_Answer] | None:
    """What a worker answered, once it has exited (None if it failed)."""
    if child is None:
        return None
    parts: list[bytes] = []
    try:
        while chunk := os.read(child.fd, 1 << 20):
            parts.append(chunk)
    finally:
        os.close(child.fd)
        child.fd = -1
    status = _reap(child, 0)
    if status is None or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    try:
        return _ANSWERS.decode(b"".join(parts))
    except msgspec.DecodeError:
        return None


def _reap(child: _Child, flags: int) -> int | None:
    """The worker's exit status once it has exited (None: not yet, with ``WNOHANG``, or it
    was reaped by someone else)."""
    if child.reaped:
        return None
    try:
        pid, status = os.waitpid(child.pid, flags)
    except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): its answer is unknown
        child.reaped = True
        return None
    if pid == 0:
        return None
    child.reaped = True
    return status


def _stop(child: _Child | None) -> None:
    """Close what is left of a worker the importer stopped waiting for, and reap it."""
    if child is None:
        return
    if child.fd >= 0:
        os.close(child.fd)
        child.fd = -1
    if not child.reaped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
        _reap(child, 0)


def _check_here(text: bytes, source: str, path: str) -> _Answer:
    try:
        return check_manifest_text(text, source=source, path=path)
    except InvalidManifest as exc:
        return _Refused(exc.detail, str(exc.details.get("path", path)))
