"""``benchproof witness init|add-log|serve``: a C2SP tlog-witness of someone's log, in a folder
of its own (``--data WDIR``: its key, its vkey and its SQLite file; nothing of any log's).

``benchproof witnesses add|list|remove``: the witnesses a log asks (``--data DIR``, the log's
data directory; configuration, ``service.core.witnesses``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from service.commands.base import Sub, local_path
from service.errors import NotFound, UsageError
from service.witness.core import DB_FILE, VKEY_FILE, Witness, WitnessError, init_witness


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "witness",
        parents=[common],
        help="run a witness (C2SP tlog-witness) that cosigns a log's checkpoints",
        description=(
            "A witness follows logs by their vkeys and cosigns each checkpoint that is"
            " consistent with the last one it cosigned (C2SP tlog-witness, cosignature/v1)."
            " --data names the witness's own folder."
        ),
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", parser_class=type(p))
    verbs.required = True
    init = verbs.add_parser("init", parents=[common], help="make the witness's key and folder")
    init.add_argument(
        "--name", required=True, help="the witness's key name, e.g. witness.example/w1"
    )
    init.set_defaults(handler=_init)
    add = verbs.add_parser("add-log", parents=[common], help="follow a log (its vkey file)")
    add.add_argument("vkey", type=local_path, metavar="LOG_VKEYFILE", help="the log's vkey file")
    add.set_defaults(handler=_add_log)
    serve = verbs.add_parser("serve", parents=[common], help="serve POST /add-checkpoint")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8470)
    serve.set_defaults(handler=_serve)

    w = sub.add_parser(
        "witnesses",
        parents=[common],
        help="the witnesses this log asks to cosign its checkpoints",
        description=(
            "Configuration of the log's data directory (DATA/witnesses.json), read again by"
            " the running service every round (one started with none needs a restart): after"
            " each checkpoint it asks every witness listed here to cosign it, in the background."
        ),
    )
    wverbs = w.add_subparsers(dest="verb", metavar="VERB", parser_class=type(w))
    wverbs.required = True
    wadd = wverbs.add_parser("add", parents=[common], help="ask a witness (its URL and vkey)")
    wadd.add_argument("url", metavar="URL", help="the witness's URL (it answers /add-checkpoint)")
    wadd.add_argument(
        "vkey", type=local_path, metavar="WITNESS_VKEYFILE", help="the witness's vkey file"
    )
    wadd.set_defaults(handler=_witnesses_add)
    wlist = wverbs.add_parser("list", parents=[common], help="the witnesses asked, and their state")
    wlist.add_argument("--json", action="store_true", help="machine-readable output")
    wlist.set_defaults(handler=_witnesses_list)
    wrm = wverbs.add_parser("remove", parents=[common], help="stop asking a witness")
    wrm.add_argument("which", metavar="URL_OR_NAME", help="the witness's URL or key name")
    wrm.set_defaults(handler=_witnesses_remove)


def _folder(args: argparse.Namespace) -> Path:
    folder: Path = args.data
    if (folder / "benchproof.db").exists():
        raise UsageError(f"{folder} is a log's data directory: a witness keeps a folder of its own")
    return folder


def _open(args: argparse.Namespace) -> Witness:
    try:
        return Witness(_folder(args))
    except WitnessError as exc:
        raise NotFound(str(exc)) from None


def _init(args: argparse.Namespace) -> int:
    try:
        signer = init_witness(_folder(args), args.name)
    except WitnessError as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write(signer.vkey + "\n")
    sys.stderr.write(f"witness {signer.name}: {args.data / VKEY_FILE}, {args.data / DB_FILE}\n")
    return 0


def _vkey_text(path: Path) -> str:
    """The text of the vkey file ``path`` named on the command line.

    Raises:
        NotFound: there is no such file. UsageError: it cannot be read as text.
    """
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: {exc}") from None


def _add_log(args: argparse.Namespace) -> int:
    text = _vkey_text(args.vkey)
    with _open(args) as witness:
        try:
            log = witness.add_log(text)
        except WitnessError as exc:
            raise UsageError(str(exc)) from None
    sys.stdout.write(f"following {log.name}\n")
    return 0


def _serve(args: argparse.Namespace) -> int:
    """Bind the socket first (``--port 0``: the system picks), name the address it is bound to
    on stdout, then serve on it until stopped."""
    import socket

    import uvicorn

    from service.witness.app import witness_app

    with _open(args) as witness:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((args.host, args.port))
            sock.listen(2048)  # connections wait in the backlog until uvicorn accepts them
        except OSError as exc:
            sock.close()
            raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
        port = sock.getsockname()[1]
        host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
        sys.stdout.write(
            f"benchproof witness: serving {witness.signer.name} on http://{host}:{port}"
            f" ({len(witness.logs())} log(s))\n"
        )
        sys.stdout.flush()
        config = uvicorn.Config(witness_app(witness), log_level="warning", access_log=False)
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def _log_dir(args: argparse.Namespace) -> Path:
    folder: Path = args.data
    if not (folder / "benchproof.db").exists() and not (folder / "keys").is_dir():
        raise NotFound(f"{folder} is not a log's data directory (benchproof init makes one)")
    return folder


def _witnesses_add(args: argparse.Namespace) -> int:
    from service.core.witnesses import add_witness

    text = _vkey_text(args.vkey)
    added = add_witness(_log_dir(args), args.url, text.strip())
    sys.stdout.write(f"asking {added.verifier.name} at {added.url}\n")
    return 0


def _witnesses_list(args: argparse.Namespace) -> int:
    import json

    from service.core.witnesses import witness_states

    rows = witness_states(_log_dir(args))
    if args.json:
        sys.stdout.write(json.dumps({"witnesses": rows}, indent=2) + "\n")
        return 0
    if not rows:
        sys.stdout.write("no witness is configured (benchproof witnesses add URL VKEYFILE)\n")
    for r in rows:
        state = (
            f"REFUSED: {r['refusal']}"
            if r["refusal"]
            else f"cosigned size {r['cosignedSize']}"
            if r["cosignedSize"] is not None
            else "not asked yet"
        )
        sys.stdout.write(f"{r['name']}  {r['url']}  {state}\n")
    return 0


def _witnesses_remove(args: argparse.Namespace) -> int:
    from service.core.witnesses import remove_witness

    gone = remove_witness(_log_dir(args), args.which)
    sys.stdout.write(f"no longer asking {gone.verifier.name} ({gone.url})\n")
    return 0
