"""Group commit: appends that arrive together are committed together.

A durable append costs one fsync (``synchronous=FULL``), so one transaction per request would cap
the log at the disk's fsync rate. Each caller queues its request and waits for the writer's
turn; whoever gets the turn commits every request queued by then in one transaction (the
single writer of the log), and each caller gets its own answer. A request carries an optional
``check``, run inside that transaction just before its own append, after those of the requests
before it (e.g. "the attester's key is still valid at the position the entry will take", which
a revocation earlier in the same group may have changed); a request whose check refuses it gets
its error and the others go on. If the shared append itself fails, each request is retried alone, so
one request's fault is never another's.

A commit that SQLite refused as busy without waiting (``SQLITE_BUSY`` and its extended codes: the
writer's ``BEGIN IMMEDIATE`` met a read still open on its connection while another connection,
such as the challenges' or another process's, held or had just released the write lock; SQLite
skips the busy handler there, since waiting could deadlock) changed nothing, so the whole group
is tried again after a short pause, for up to ``BUSY_RETRY`` seconds, before anyone hears of it.

An event loop's handlers use ``submit_async`` instead: a request waits on a future rather than
on a thread, and one worker thread runs the commits for the loop, each of every request queued
while the one before was committing; both paths take the same turn, so their commits never
overlap.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from events.stores.faults import StorageBusy

__all__ = ["BUSY_RETRY", "GroupCommit", "Request", "busy"]

BUSY_RETRY = 5.0
"""Seconds a group refused as busy (``busy``) is tried again before its requests hear so."""


def busy(exc: BaseException) -> bool:
    """Whether ``exc`` is the store refusing a transaction as busy (``StorageBusy``: nothing
    was written; the stores' sessions say their drivers' busy errors so)."""
    return isinstance(exc, StorageBusy)


S = TypeVar("S")
R = TypeVar("R")
T = TypeVar("T")


class Request(Generic[T, S, R]):
    """One caller's items, its check, and (once committed) its answer or its error."""

    def __init__(self, items: Sequence[T], check: Callable[[S], None] | None) -> None:
        self.items = list(items)
        self.check = check
        self.result: list[R] | None = None
        self.error: BaseException | None = None
        self.done = False


Commit = Callable[[list[Request[T, S, R]]], None]
"""Commits requests in one transaction: runs each check, appends the items of those that pass,
and sets each request's ``result`` or ``error``; raises if the transaction failed as a whole."""


class GroupCommit(Generic[T, S, R]):
    """Coalesces concurrent requests into shared commits (see the module's docstring)."""

    def __init__(
        self, commit: Commit[T, S, R], *, whole: tuple[type[BaseException], ...] = ()
    ) -> None:
        self._commit = commit
        self._whole = whole  # errors that are the group's, not one request's: no retry alone
        self._queue: list[Request[T, S, R]] = []
        self._queued = threading.Lock()
        self._turn = threading.Lock()
        self.commits = 0  # transactions committed: one fsync each
        # Requests from the event loop, waiting for the loop's next commit (loop thread only).
        self._waiting: list[tuple[Request[T, S, R], asyncio.Future[list[R]]]] = []
        self._draining = False
        self._drainer: asyncio.Task[None] | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._closed = False

    async def submit_async(
        self, items: Sequence[T], check: Callable[[S], None] | None = None
    ) -> list[R]:
        """``submit`` for a handler on an event loop: the loop goes on serving while the writer
        thread commits this request with the others queued meanwhile.

        Raises:
            Whatever ``check`` or the append raised for this request.
        """
        if self._closed:
            raise RuntimeError("the log is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[R]] = loop.create_future()
        self._waiting.append((Request(items, check), future))
        if not self._draining:
            self._draining = True
            self._drainer = loop.create_task(
                self._drain(loop)
            )  # held: a task nobody holds may vanish
        return await future

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        """Commit what the loop's handlers queued, a group at a time, until nothing waits. If
        the loop cancels this task (it stops), every request still waiting hears so; a commit
        under way runs to its end in the writer thread."""
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="group-commit")
        waiting: list[tuple[Request[T, S, R], asyncio.Future[list[R]]]] = []
        try:
            while self._waiting:
                waiting, self._waiting = self._waiting, []
                batch = [request for request, _ in waiting]
                try:
                    await loop.run_in_executor(self._writer, self._run_in_turn, batch)
                except Exception as exc:  # noqa: BLE001 - the commit failed: each hears of it
                    for request in batch:
                        if request.error is None and request.result is None:
                            request.error = exc
                for request, future in waiting:
                    _answer(future, request.result, request.error)
                waiting = []
        finally:
            self._draining = False
            stopping = RuntimeError(
                "the server stopped before this write was acknowledged (it may be in the log)"
            )
            for _, future in [*waiting, *self._waiting]:
                _answer(future, None, stopping)
            if waiting or self._waiting:
                self._waiting = []

    def _run_in_turn(self, batch: list[Request[T, S, R]]) -> None:
        with self._turn:
            self._run(batch)

    def close(self) -> None:
        """Stop the writer thread of ``submit_async`` (after the commit under way, if any);
        later async requests are refused."""
        self._closed = True
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def submit(self, items: Sequence[T], check: Callable[[S], None] | None = None) -> list[R]:
        """Commit ``items`` (with others queued meanwhile); return their answers.

        Raises:
            Whatever ``check`` or the append raised for this request.
        """
        request: Request[T, S, R] = Request(items, check)
        with self._queued:
            self._queue.append(request)
        with self._turn:
            if not request.done:
                with self._queued:
                    batch, self._queue = self._queue, []
                self._run(batch)
        if request.error is not None:
            raise request.error
        assert request.result is not None  # noqa: S101 - done without an error
        return request.result

    def _commit_retrying(self, batch: list[Request[T, S, R]]) -> None:
        """``commit`` the batch, again after a pause while SQLite refuses it as busy (its
        transaction was rolled back: the answers it set are forgotten), for ``BUSY_RETRY``
        seconds at most."""
        deadline = time.monotonic() + BUSY_RETRY
        pause = 0.001
        while True:
            try:
                self._commit(batch)
                return
            except Exception as exc:
                if not busy(exc) or time.monotonic() + pause > deadline:
                    raise
            for request in batch:
                request.result = request.error = None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _run(self, batch: list[Request[T, S, R]]) -> None:
        try:
            self._commit_retrying(batch)
            self.commits += 1
        except Exception as exc:  # noqa: BLE001 - handed to the requests it concerns
            if len(batch) == 1 or isinstance(exc, self._whole) or busy(exc):
                for request in batch:
                    request.error = exc
            else:  # one request's fault must not be another's: each alone
                for request in batch:
                    request.result = request.error = None
                    self._run([request])
        finally:
            for request in batch:
                if request.result is None and request.error is None:  # interrupted meanwhile
                    request.error = RuntimeError("the commit was interrupted")
                request.done = True


def _answer(
    future: asyncio.Future[list[R]], result: list[R] | None, error: BaseException | None
) -> None:
    """Settle a waiting request's future (unless its caller gave up on it)."""
    if future.done():
        return
    if error is None:
        future.set_result(result or [])
        return
    try:
        future.set_exception(error)
    except TypeError:  # StopIteration cannot travel through a future
        future.set_exception(RuntimeError(repr(error)))
