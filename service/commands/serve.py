"""``benchproof serve`` and ``benchproof token create NAME``."""

from __future__ import annotations

import argparse
import gc
import ipaddress
import os
import sys
from typing import Any

import msgspec

from service.commands.base import Sub
from service.core.config import Settings
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
        default="",
        metavar="URL",
        help="the address permalinks and citations name (default: the one each request came to)",
    )
    p.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help="server processes sharing the port and the data directory (default 1); each "
        "checks requests on its own core, and one at a time appends to the log",
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
    import uvicorn

    from service.core.ledger import open_log
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
    options: dict[str, Any] = {"log_level": "warning", "access_log": False}
    if args.workers > 1:
        # Each worker process builds its own app from the settings (``app_from_environment``);
        # the log's writes serialise across them in the database.
        from service.web.app import SETTINGS_VARIABLE

        open_log(args.data).close()  # a missing or unusable data directory fails here, once
        os.environ[SETTINGS_VARIABLE] = msgspec.json.encode(settings, enc_hook=str).decode()
        app: Any = "service.web.app:app_from_environment"
        options |= {"factory": True, "workers": args.workers}
        processes = f" with {args.workers} processes"
    else:
        app = create_app(settings)
        # What is alive now (code, the app, caches' scaffolding) lives as long as the process:
        # moving it out of the collector's generations keeps its pauses short under load.
        gc.freeze()
        processes = ""
    if args.port == 0:
        return _serve_on_a_picked_port(app, args, processes, options)
    sys.stderr.write(
        f"benchproof: serving {args.data} on http://{args.host}:{args.port}{processes}\n"
    )
    uvicorn.run(app, host=args.host, port=args.port, **options)
    return 0


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
