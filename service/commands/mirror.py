"""``benchproof export DEST`` (a self-verifying segment of the log) and ``benchproof import-log
SRC | --server URL --log-key VKEY`` (a mirror: the same leaves, verified before it takes them).

``import-log`` exits 0 when the mirror holds the source's tree (taken or already held), 1 when
the source does not verify (nothing was taken), 2 on bad input (a key file that holds no vkey,
a folder that is not a segment, a server that cannot be reached, a data directory that is
neither empty nor a mirror)."""

from __future__ import annotations

import argparse
import sys

import msgspec

from service.app.mirror import ImportRefused, import_log
from service.app.segment import export
from service.commands.base import Sub, add_log_key, local_path, position, read_log_key
from service.console.progress import Progress
from verifier.tiles import SourceInvalid


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="a JSON summary on stdout")

    p = sub.add_parser(
        "export",
        parents=[common, as_json],
        help="write a self-verifying segment of the log (C2SP tlog-tiles layout) into DEST",
        description=(
            "Write into DEST (absent or empty) the signed checkpoint of size M, every hash tile "
            "of that tree, the entry bundles that hold the entries [N, M), the log's vkey (for "
            "information) and segment.json. Any static file server can serve DEST; "
            "`benchproof import-log DEST` takes it into a mirror."
        ),
    )
    p.add_argument("dest", type=local_path, metavar="DEST")
    p.add_argument("--start", type=position, default=0, metavar="N", help="first entry (default 0)")
    p.add_argument(
        "--end",
        type=position,
        default=None,
        metavar="M",
        help="tree size: one the log signed a checkpoint for (default: the latest)",
    )
    p.set_defaults(handler=_export)

    p = sub.add_parser(
        "import-log",
        parents=[common, as_json],
        help="make or update a mirror of a log from a segment or a server",
        description=(
            "Take the log that SRC (a folder written by `benchproof export`) or --server URL "
            "(its C2SP tlog-tiles API) holds into the data directory as a mirror: a new one in "
            "an absent or empty directory, else the entries since those the mirror holds. "
            "Everything is verified before it is taken: the checkpoint with --log-key, each "
            "entry against its tile, the tree against the signed root, and every signature as "
            "`benchproof verify` checks them. Exit 1: the source does not verify (nothing taken)."
        ),
    )
    p.add_argument(
        "src", type=local_path, nargs="?", metavar="SRC", help="an exported segment folder"
    )
    p.add_argument("--server", metavar="URL", help="a server's base URL, instead of SRC")
    add_log_key(p, "a file holding the origin log's vkey (`benchproof log key` there)")
    p.set_defaults(handler=_import)


def _print(answer: msgspec.Struct, text: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(answer), indent=2) + b"\n")
    else:
        sys.stdout.write(text + "\n")


def _export(args: argparse.Namespace) -> int:
    with Progress("export: entries written") as bar:
        done = export(
            args.data,
            args.dest,
            start=args.start,
            end=args.end,
            progress=bar.advance,
            expect=bar.expect,
        )
    text = (
        f"exported entries {done.start}..{done.end - 1} of {done.origin} (tree size "
        f"{done.treeSize}) to {done.dest}: {done.tiles} hash tiles, {done.bundles} entry bundles"
    )
    _print(done, text, args.json)
    return 0


def _import(args: argparse.Namespace) -> int:
    if (args.src is None) == (args.server is None):
        sys.stderr.write("benchproof: error: import-log takes SRC or --server URL (one of them)\n")
        return 2
    verifier = read_log_key(args.log_key)
    try:
        with Progress("import-log: entries fetched") as bar:
            done = import_log(
                args.data,
                verifier=verifier,
                folder=args.src,
                server=args.server,
                progress=bar.advance,
                expect=bar.expect,
                note=bar.note,
            )
    except (ImportRefused, SourceInvalid) as exc:
        message = " ".join(exc.detail.split())
        if args.json:
            refusal = {"ok": False, "refused": message}
            sys.stdout.buffer.write(msgspec.json.encode(refusal) + b"\n")
        sys.stderr.write(f"benchproof: import refused, nothing taken: {message}\n")
        return 1
    _print(done, done.summary(), args.json)
    return 0
