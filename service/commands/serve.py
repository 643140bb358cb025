"""``benchproof serve`` and ``benchproof token create NAME``."""

from __future__ import annotations

import argparse
import contextlib
import gc
import ipaddress
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from events.bulk import cores
from service.commands.base import Sub
from service.core.config import PUBLIC_URL_ENV, Settings
from service.shared.limits import Limits
from service.web.auth import TokenStore


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("serve", parents=[common], help="serve the HTTP API and pages (uvicorn)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port (default 8000; 0: one the system picks, named in the line serve prints)",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="initialise the data directory and load license-clean demo data on first start",
    )
    defaults = Limits()
    for scope, span, default in (
        ("key", "hour", defaults.key_hour),
        ("key", "day", defaults.key_day),
        ("address", "hour", defaults.address_hour),
        ("address", "day", defaults.address_day),
    ):
        p.add_argument(
            f"--limit-{scope}-{span}",
            type=_count,
            default=default,
            metavar="N",
            help=f"public writes per {scope if scope == 'key' else 'client address'} per {span}"
            f" (default {default}; 0: no limit)",
        )
    p.add_argument(
        "--trusted-proxy",
        dest="trusted_proxies",
        action="append",
        default=[],
        type=_address,
        metavar="IP",
        help="a reverse proxy whose X-Forwarded-For names the client (repeatable)",
    )
    p.add_argument(
        "--public-url",
        default=os.environ.get(PUBLIC_URL_ENV, ""),
        metavar="URL",
        help="the address permalinks and citations name (default: $BENCHPROOF_PUBLIC_URL, else"
        " the one each request came to)",
    )
    p.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="server processes sharing the port (default: one a core, here "
        f"{cores()}); each checks requests on its own core, and one writer process commits "
        "their writes to the log, in order (1: all in this process)",
    )
    p.set_defaults(handler=_serve)

    token = sub.add_parser("token", parents=[common], help="operator tokens")
    tsub = token.add_subparsers(dest="token_command", metavar="WHAT", parser_class=type(token))
    tsub.required = True
    p = tsub.add_parser("create", parents=[common], help="create a token and print it once")
    p.add_argument("name")
    p.set_defaults(handler=_token)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a count (0 or more): {text!r}")
    return int(text)


def _workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"not a number of processes (1 to 64): {text!r}")
    return int(text)


def _address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP address: {text!r}") from None


def _serve(args: argparse.Namespace) -> int:
    from service.core.ledger import Ledger, open_log
    from service.web.app import create_app

    if args.demo:
        from service.demo import prepare_demo

        prepare_demo(args.data)
    limits = Limits(
        key_hour=args.limit_key_hour,
        key_day=args.limit_key_day,
        address_hour=args.limit_address_hour,
        address_day=args.limit_address_day,
    )
    settings = Settings(
        data=args.data,
        host=args.host,
        port=args.port,
        limits=limits,
        trusted_proxies=tuple(args.trusted_proxies),
        public_url=args.public_url,
    )
    workers = args.workers or cores()
    options: dict[str, Any] = {"log_level": "warning", "access_log": False}
    if workers == 1:
        app: Any = create_app(settings)
        # What is alive now (code, the app, caches' scaffolding) lives as long as the process:
        # moving it out of the collector's generations keeps its pauses short under load.
        gc.freeze()
        return _run(app, args, "", options)
    # Each worker process builds its own app from the settings (``app_from_environment``) and
    # checks its requests on its own core; one writer process commits their writes in order.
    from service.web.app import SETTINGS_VARIABLE

    opened = open_log(args.data)  # a missing or unusable data directory fails here, once
    own_log = isinstance(opened, Ledger)
    opened.close()
    options |= {"factory": True, "workers": workers}
    app = "service.web.app:app_from_environment"
    if not own_log:  # a mirror takes no writes: no writer
        os.environ[SETTINGS_VARIABLE] = msgspec.json.encode(settings, enc_hook=str).decode()
        return _run(app, args, f" with {workers} processes", options)
    with WriterProcess(args.data) as writer:
        settings = msgspec.structs.replace(settings, writer=str(writer.path))
        os.environ[SETTINGS_VARIABLE] = msgspec.json.encode(settings, enc_hook=str).decode()
        return _run(app, args, f" with {workers} processes and one writer", options)


def _run(app: Any, args: argparse.Namespace, processes: str, options: dict[str, Any]) -> int:
    import uvicorn

    if args.port == 0:
        return _serve_on_a_picked_port(app, args, processes, options)
    sys.stderr.write(
        f"benchproof: serving {args.data} on http://{args.host}:{args.port}{processes}\n"
    )
    uvicorn.run(app, host=args.host, port=args.port, **options)
    return 0


class WriterProcess:
    """The writer process of ``serve --workers N`` (``python -m service.commands.writer``), on
    a unix socket in a folder of its own (mode 0700), for the length of a ``with`` block:
    started before the workers, started again if it dies, stopped after them (its standard
    input closed: it ignores the signals a terminal or a service manager sends the group)."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.folder = Path(tempfile.mkdtemp(prefix="benchproof-writer-"))
        self.path = self.folder / "writer.sock"
        self._stopping = False
        self._turn = threading.Lock()  # starts and the stop, one at a time
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        command = [sys.executable, "-m", "service.commands.writer", str(self.data), str(self.path)]
        self._proc = proc = subprocess.Popen(command, stdin=subprocess.PIPE)  # noqa: S603 - our own interpreter and module
        deadline = time.monotonic() + 60
        while not self.path.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"the writer process exited with {proc.returncode}")
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("the writer process did not start within 60 s")
            time.sleep(0.02)

    def _watch(self) -> None:
        while True:
            proc = self._proc
            assert proc is not None  # noqa: S101 - started before the watch
            code = proc.wait()
            with self._turn:
                if self._stopping:
                    return
                sys.stderr.write(
                    f"benchproof: the writer process exited ({code}); starting another\n"
                )
                try:
                    self._start()
                except Exception as exc:  # noqa: BLE001 - said, and tried again
                    sys.stderr.write(f"benchproof: {exc}; trying again in a second\n")
                    time.sleep(1)

    def __enter__(self) -> WriterProcess:
        try:
            self._start()
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        threading.Thread(target=self._watch, name="writer-watch", daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._turn:
            self._stopping = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _serve_on_a_picked_port(
    app: Any, args: argparse.Namespace, processes: str, options: dict[str, Any]
) -> int:
    """``--port 0``: the socket is bound first, on a port the system picks, and the line names
    that port, so that a caller (the tests) reads where the server is instead of choosing a
    free port and racing others to it. Otherwise as ``uvicorn.run``."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(app, host=args.host, port=0, **options)
    sock = config.bind_socket()
    port = sock.getsockname()[1]
    sys.stderr.write(f"benchproof: serving {args.data} on http://{args.host}:{port}{processes}\n")
    sys.stderr.flush()
    server = uvicorn.Server(config)
    try:
        if config.workers > 1:
            Multiprocess(config, sockets=[sock]).run()
        else:
            server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    if config.workers == 1 and not server.started:
        sys.exit(STARTUP_FAILURE)
    return 0


def _token(args: argparse.Namespace) -> int:
    from service.core.config import DataDir

    data = DataDir(args.data)
    if not data.exists():
        from service.errors import NotInitialised

        raise NotInitialised(f"no log in {args.data} (run `benchproof init --data {args.data}`)")
    token = TokenStore(data.tokens).create(args.name)
    print(token)
    sys.stderr.write("benchproof: this token is shown once; only its hash is kept\n")
    return 0
