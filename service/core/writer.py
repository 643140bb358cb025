"""The log's single writer, in a process of its own, for ``serve --workers N``.

The server's worker processes take the requests, on every core: they read and strictly decode
the bodies, check the envelopes, statements and signatures against the claimed keys, the
proofs of possession and the rate limits. What passed reaches the writer over a unix socket as
one ``Submit``: the entries to append and the one ``StateCheck`` that must be judged at the
entries' own position (``service.core.statechecks``). The writer keeps every such request in
one queue, in arrival order, and its ledger's group commit commits them in groups: each check
runs in the transaction just before its own entries, after everything queued before it, so a
revocation or a claim earlier in the same group is seen. The answer (``Reply``: where each
entry landed, or the refusal) goes back on the same connection; the worker then builds the
receipt from the shared log, as before.

Frames are a 4-byte big-endian length and a MessagePack body (msgspec). A refusal travels as the
error's class (``module:name``, only the service's, the log's and the projections' errors are
built again; anything else arrives as ``RuntimeError``), its detail and its details, so the
worker answers exactly the problem it would have answered in process.

If the writer is unreachable (it died: the server starts a new one), a worker's write is
refused as busy (503, nothing recorded that the caller was told of; trying again is safe, as a
post that did land answers its entry).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
import os
import socket
import struct
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from events.entries import Pending
from events.port import Appended
from events.stores.faults import StorageBusy, storage_fault
from service.core.ledger import Ledger
from service.core.statechecks import StateCheck

__all__ = ["WriterClient", "WriterGone", "WriterUnavailable", "serve_writer"]

_LENGTH = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024 + 65536  # a request body's limit, and its envelope
_REBUILT = ("service.", "events.", "projections.", "keys.", "verifier.")
ANSWER_SECONDS = 300.0  # a thread waits this long for the writer's answer, then hears 503


class WriterUnavailable(StorageBusy):
    """The writer process could not be reached: the request never reached it."""

    public = "The log's writer is restarting: nothing of this request was recorded. Try again."


class WriterGone(WriterUnavailable):
    """The writer took the request and went away (or fell silent) before it answered: the
    write may be in the log. An attestation, a rerun result or a claim sent again answers the
    entry the log holds; other writes may be refused as done already."""

    public = (
        "The log's writer stopped before it answered: this write may have been recorded."
        " Sending an attestation again is safe (it answers its entry)."
    )


class WirePending(msgspec.Struct, frozen=True, array_like=True):
    type: str
    subject: str
    payload: bytes
    payload_type: str
    envelope: bytes | None


class Submit(msgspec.Struct, frozen=True, array_like=True):
    id: int
    items: list[WirePending]
    check: StateCheck | None


class WireError(msgspec.Struct, frozen=True, array_like=True):
    kind: str  # module:name of the error's class
    detail: str
    details: dict[str, Any]


class Reply(msgspec.Struct, frozen=True, array_like=True):
    id: int
    appended: list[Appended] | None
    error: WireError | None


_ENCODER = msgspec.msgpack.Encoder()
_SUBMIT = msgspec.msgpack.Decoder(Submit)
_REPLY = msgspec.msgpack.Decoder(Reply)


def _frame(message: msgspec.Struct) -> bytes:
    body = _ENCODER.encode(message)
    return _LENGTH.pack(len(body)) + body


def wire_error(exc: BaseException) -> WireError:
    """``exc`` as it travels back to the worker."""
    kind = f"{type(exc).__module__}:{type(exc).__qualname__}"
    detail = str(getattr(exc, "detail", exc))
    details = getattr(exc, "details", None)
    if not isinstance(details, dict):
        details = {}
    try:
        _ENCODER.encode(details)
    except (TypeError, ValueError):
        details = {k: str(v) for k, v in details.items()}
    return WireError(kind, detail, details)


def error_of(wire: WireError) -> BaseException:
    """The error ``wire`` describes, built again when it is one of ours (else ``RuntimeError``)."""
    module, _, name = wire.kind.partition(":")
    if module.startswith(_REBUILT) and name.isidentifier():
        with contextlib.suppress(ImportError):
            cls = getattr(importlib.import_module(module), name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                try:
                    return cls(wire.detail, **wire.details)
                except TypeError:
                    with contextlib.suppress(TypeError):
                        return cls(wire.detail)
    return RuntimeError(f"{wire.kind}: {wire.detail}")


def _wire(pending: Pending) -> WirePending:
    return WirePending(
        pending.type, pending.subject, pending.payload, pending.payload_type, pending.envelope
    )


def _pending(wire: WirePending) -> Pending:
    return Pending(
        type=wire.type,
        subject=wire.subject,
        payload=wire.payload,
        payload_type=wire.payload_type,
        envelope=wire.envelope,
    )


# --- the writer ---------------------------------------------------------------------------


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(_LENGTH.size)
        (size,) = _LENGTH.unpack(head)
        if size > MAX_FRAME:
            raise ValueError(f"a frame of {size} bytes")
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None


async def _answer(ledger: Ledger, submit: Submit, writer: asyncio.StreamWriter) -> None:
    try:
        appended = await ledger.append_pending_async(
            [_pending(p) for p in submit.items], check=submit.check
        )
        reply = Reply(submit.id, appended, None)
    except Exception as exc:  # noqa: BLE001 - the request's refusal, sent back to it
        # A file-system error is the storage fault it is (full, read-only...), as the HTTP
        # layer of one process would say it.
        fault = storage_fault(exc, None) if isinstance(exc, OSError) else None
        reply = Reply(submit.id, None, wire_error(fault or exc))
    if not writer.is_closing():
        writer.write(_frame(reply))
        with contextlib.suppress(ConnectionError):
            await writer.drain()


async def serve_writer(ledger: Ledger, path: Path, stop: asyncio.Event) -> None:
    """Answer the workers' ``Submit`` frames on the unix socket ``path`` (mode 0600) with
    ``ledger``'s group commit, until ``stop`` is set; then close every connection (requests
    under way are answered first)."""
    tasks: set[asyncio.Task[None]] = set()
    connections: set[asyncio.StreamWriter] = set()

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.add(writer)
        try:
            while (body := await _read_frame(reader)) is not None:
                task = asyncio.create_task(_answer(ledger, _SUBMIT.decode(body), writer))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (ConnectionError, ValueError, msgspec.DecodeError):
            pass  # a broken or foreign peer: its connection ends, nobody else's
        finally:
            connections.discard(writer)
            writer.close()

    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    old = os.umask(0o177)
    try:
        server = await asyncio.start_unix_server(client, path=str(path), limit=MAX_FRAME)
    finally:
        os.umask(old)
    async with server:
        await stop.wait()
        server.close()
        if tasks:
            await asyncio.wait(set(tasks))
        for writer in list(connections):
            writer.close()


# --- the workers' side --------------------------------------------------------------------


class _Connection:
    """One multiplexed connection of one event loop: requests by id, a task reading replies."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.waiting: dict[int, asyncio.Future[Reply]] = {}
        self.reading = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            while (body := await _read_frame(self.reader)) is not None:
                reply = _REPLY.decode(body)
                future = self.waiting.pop(reply.id, None)
                if future is not None and not future.done():
                    future.set_result(reply)
        except (ConnectionError, ValueError, msgspec.DecodeError):
            pass
        finally:
            self.writer.close()
            gone = WriterGone("the writer process went away before it answered")
            for future in self.waiting.values():
                if not future.done():
                    future.set_exception(gone)
            self.waiting.clear()

    @property
    def alive(self) -> bool:
        return not self.reading.done() and not self.writer.is_closing()


class WriterClient:
    """A worker's way to the writer at ``path``: ``submit_async`` on an event loop (one shared
    connection a loop), ``submit`` from a thread (one connection a thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ids = itertools.count(1)
        self._loops: dict[asyncio.AbstractEventLoop, _Connection] = {}
        self._local = threading.local()
        self._held: weakref.WeakSet[_Held] = weakref.WeakSet()  # every live thread's

    async def submit_async(
        self, pending: Sequence[Pending], check: StateCheck | None
    ) -> list[Appended]:
        connection = await self._connection()
        request_id = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        connection.waiting[request_id] = future
        try:
            connection.writer.write(_frame(Submit(request_id, [_wire(p) for p in pending], check)))
            await connection.writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            connection.waiting.pop(request_id, None)
            raise WriterGone(f"the connection to the writer broke: {exc}") from None
        try:
            reply = await asyncio.wait_for(future, ANSWER_SECONDS)
        except TimeoutError:
            connection.waiting.pop(request_id, None)
            raise WriterGone(f"the writer did not answer within {ANSWER_SECONDS:.0f} s") from None
        return _result(reply)

    async def _connection(self) -> _Connection:
        loop = asyncio.get_running_loop()
        connection = self._loops.get(loop)
        if connection is None or not connection.alive:
            try:
                reader, writer = await asyncio.open_unix_connection(str(self.path), limit=MAX_FRAME)
            except OSError as exc:
                raise WriterUnavailable(f"the writer process could not be reached: {exc}") from None
            connection = self._loops[loop] = _Connection(reader, writer)
        return connection

    def submit(self, pending: Sequence[Pending], check: StateCheck | None) -> list[Appended]:
        request_id = next(self._ids)
        frame = _frame(Submit(request_id, [_wire(p) for p in pending], check))
        held: _Held | None = getattr(self._local, "held", None)
        try:
            if held is None:
                held = self._connect()
            try:
                held.sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                # This thread's connection was to a writer that is gone (restarted since): the
                # frame reached nobody, so it is sent once more, on a new connection.
                self._forget(held)
                held = self._connect()
                held.sock.sendall(frame)
        except OSError as exc:
            self._forget(held)
            raise WriterUnavailable(f"the writer process could not be reached: {exc}") from None
        try:
            reply = _REPLY.decode(_receive(held.sock))
        except (OSError, msgspec.DecodeError) as exc:
            self._forget(held)
            raise WriterGone(f"the writer did not answer: {exc}") from None
        if reply.id != request_id:
            self._forget(held)
            raise WriterGone("the writer's answer was for another request")
        return _result(reply)

    def _connect(self) -> _Held:
        """A new connection for this thread (kept while the thread lives)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(ANSWER_SECONDS)
            sock.connect(str(self.path))
        except OSError:
            sock.close()
            raise
        held = _Held(sock)
        self._held.add(held)
        self._local.held = held
        return held

    def _forget(self, held: _Held | None) -> None:
        if held is not None:
            held.sock.close()
            self._held.discard(held)
        self._local.held = None

    def close(self) -> None:
        """Close every thread's connection and every loop's."""
        for held in list(self._held):
            held.sock.close()
        self._held = weakref.WeakSet()
        self._local = threading.local()
        for connection in self._loops.values():
            with contextlib.suppress(RuntimeError):
                connection.writer.close()
        self._loops.clear()


class _Held:
    """One thread's connection. Kept in the thread's ``threading.local``: when the thread ends
    (a server's worker threads retire when idle), the holder goes and its socket is closed."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        weakref.finalize(self, sock.close)


def _receive(sock: socket.socket) -> bytes:
    head = _exactly(sock, _LENGTH.size)
    (size,) = _LENGTH.unpack(head)
    if size > MAX_FRAME:
        raise OSError(f"a frame of {size} bytes")
    return _exactly(sock, size)


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionResetError("the writer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _result(reply: Reply) -> list[Appended]:
    if reply.error is not None:
        raise error_of(reply.error)
    return reply.appended or []
