"""``benchproof serve`` and ``benchproof token create NAME``."""

from __future__ import annotations

import argparse
import gc
import sys

from service.commands.base import Sub
from service.config import Settings
from service.web.auth import TokenStore


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("serve", parents=[common], help="serve the HTTP API and pages (uvicorn)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--demo",
        action="store_true",
        help="initialise the data directory and load license-clean demo data on first start",
    )
    p.set_defaults(handler=_serve)

    token = sub.add_parser("token", parents=[common], help="operator tokens")
    tsub = token.add_subparsers(dest="token_command", metavar="WHAT", parser_class=type(token))
    tsub.required = True
    p = tsub.add_parser("create", parents=[common], help="create a token and print it once")
    p.add_argument("name")
    p.set_defaults(handler=_token)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.web.app import create_app

    if args.demo:
        from service.demo import prepare_demo

        prepare_demo(args.data)
    settings = Settings(data=args.data, host=args.host, port=args.port)
    app = create_app(settings)
    # What is alive now (code, the app, caches' scaffolding) lives as long as the process:
    # moving it out of the collector's generations keeps its pauses short under load.
    gc.freeze()
    sys.stderr.write(f"benchproof: serving {args.data} on http://{args.host}:{args.port}\n")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


def _token(args: argparse.Namespace) -> int:
    from service.config import DataDir

    data = DataDir(args.data)
    if not data.exists():
        from service.errors import NotInitialised

        raise NotInitialised(f"no log in {args.data} (run `benchproof init --data {args.data}`)")
    token = TokenStore(data.tokens).create(args.name)
    print(token)
    sys.stderr.write("benchproof: this token is shown once; only its hash is kept\n")
    return 0
