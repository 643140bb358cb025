"""The pipe between a parallel rebuild (``projections.shards``) and its worker processes: each
worker writes frames (a kind byte and the body's length, ``HEADER``, then the body: ``C`` a
pickled list of member changes, ``D`` done with the count of entries read, ``E`` an error),
and the caller reads them on a thread (``Worker``).

The thread holds at most ``AHEAD`` frames: a shard that runs ahead of the merge (which waits
for the slowest) then blocks on its pipe, so the caller's memory is bounded by a few batches,
not by the log."""

from __future__ import annotations

import pickle
import queue
import struct
import subprocess
import threading
from collections.abc import Iterator
from typing import IO, Any

from events.errors import LogError

__all__ = ["HEADER", "Worker"]

HEADER = struct.Struct(">cQ")  # C: member changes, D: done, E: error; then the body's length
AHEAD = 4  # frames (batches of member changes) a worker's thread holds before it waits


class Worker:
    """One shard's process, and a thread that drains its pipe into a queue."""

    def __init__(self, command: list[str], errors: IO[bytes]) -> None:
        self.errors = errors
        self.proc = subprocess.Popen(  # noqa: S603 - our own module, by the running interpreter
            command, stdout=subprocess.PIPE, stderr=errors
        )
        self.frames: queue.Queue[tuple[bytes, bytes]] = queue.Queue(maxsize=AHEAD)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None  # noqa: S101 - piped above
        while True:
            header = stdout.read(HEADER.size)
            if len(header) < HEADER.size:
                self._put((b"", b""))
                return
            kind, length = HEADER.unpack(header)
            body = stdout.read(length)
            if len(body) < length:  # it died while writing
                self._put((b"", b""))
                return
            if not self._put((kind, body)) or kind != b"C":
                return

    def _put(self, frame: tuple[bytes, bytes]) -> bool:
        """Hand ``frame`` to the caller, waiting while it holds ``AHEAD``; False once the
        worker is being stopped (nobody will read it)."""
        while not self.stopping.is_set():
            try:
                self.frames.put(frame, timeout=0.1)
            except queue.Full:
                continue
            return True
        return False

    def changes(self) -> Iterator[Any]:
        """The shard's member changes, in its order, until it is done.

        Raises:
            LogError: the process failed or ended early. EventError (LogCorrupted…): an entry
            does not read or decode, raised with the plain rebuild's class, words and details."""
        while True:
            kind, body = self.frames.get()
            if kind == b"C":
                yield from pickle.loads(body)  # noqa: S301 - from our own worker process
            elif kind == b"D":
                self.count = int(body)
                return
            elif kind == b"E":
                error, detail, details = pickle.loads(body)  # noqa: S301 - our own worker's
                raise error(detail, **details)
            else:
                self.proc.wait()
                self.errors.seek(0)
                lines = self.errors.read().decode(errors="replace").strip().splitlines()
                raise LogError("a rebuild worker ended early" + (f": {lines[-1]}" if lines else ""))

    def stop(self) -> None:
        self.stopping.set()  # a thread waiting to hand over a frame gives up
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.thread.join()
        assert self.proc.stdout is not None  # noqa: S101 - piped above
        self.proc.stdout.close()
