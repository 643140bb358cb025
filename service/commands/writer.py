"""``python -m service.commands.writer DATA SOCKET``: the log's single writer for ``benchproof
serve --workers N`` (``service.core.writer``), which starts it, restarts it if it dies, and
stops it by closing its standard input. It opens the ledger of the data directory ``DATA`` (its
store as the directory records it, or ``BENCHPROOF_STORE``) and answers on the unix socket
``SOCKET``.

SIGINT and SIGTERM are left to the server that started it: a Ctrl-C at the terminal, or a
service manager's SIGTERM, reaches the whole process group; the server stops its workers first
(they finish the requests under way) and then closes this writer's input, so that no request
under way loses its writer. If the server is killed, the input closes too."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from pathlib import Path

from service.core.ledger import Ledger
from service.core.witnesses import start_cosigner
from service.core.writer import serve_writer


def _until_input_closes(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set ``stop`` once the server closes this process's standard input (or dies)."""
    with contextlib.suppress(OSError, ValueError):
        while sys.stdin.buffer.read(4096):
            pass
    loop.call_soon_threadsafe(stop.set)


async def _main(data: Path, path: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    threading.Thread(target=_until_input_closes, args=(loop, stop), daemon=True).start()
    with Ledger.open(data) as ledger:
        halt = start_cosigner(ledger.store, data, ledger.data.store)
        try:
            await serve_writer(ledger, path, stop)
        finally:
            halt()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m service.commands.writer DATA SOCKET\n")
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn's standard extras bring it
        asyncio.run(_main(Path(argv[0]), Path(argv[1])))
    else:
        uvloop.run(_main(Path(argv[0]), Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
