"""``python -m service.commands.writer DATA SOCKET``: the log's single writer for ``benchproof
serve --workers N`` (``service.core.writer``), which starts it, restarts it if it dies, and
stops it with SIGTERM. It opens the ledger of the data directory ``DATA`` (its store as the
directory records it, or ``BENCHPROOF_STORE``) and answers on the unix socket ``SOCKET``.

SIGINT is left to the server that started it (a Ctrl-C at the terminal reaches the whole
process group: the server stops its workers first, then this writer, so that no request under
way loses its writer)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from service.core.ledger import Ledger
from service.core.writer import serve_writer


async def _orphaned(stop: asyncio.Event) -> None:
    """Stop once the server that started this writer is gone (it was killed: no SIGTERM)."""
    parent = os.getppid()
    while not stop.is_set():
        if os.getppid() != parent:
            stop.set()
        await asyncio.sleep(1)


async def _main(data: Path, path: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    watch = loop.create_task(_orphaned(stop))
    with Ledger.open(data) as ledger:
        await serve_writer(ledger, path, stop)
    watch.cancel()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m service.commands.writer DATA SOCKET\n")
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn's standard extras bring it
        asyncio.run(_main(Path(argv[0]), Path(argv[1])))
    else:
        uvloop.run(_main(Path(argv[0]), Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
