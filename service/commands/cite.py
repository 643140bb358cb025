"""``benchproof cite RUN --format F`` (how to cite a run, from a data directory or a server) and
``benchproof verify-citation FILE --log-key VKEY`` (check a receipt offline: no network, no data
directory, only the file and the log's verifier key)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlencode

import httpx
import msgspec

from keys import KeyringError
from keys.notekeys import parse_vkey
from service.app.cite import FORMATS, check_citation, citation
from service.client import Client, run_path
from service.commands.base import Sub
from service.errors import UsageError
from service.receipts import ReceiptInvalid, verify_receipt

__all__ = ["register"]


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("cite", parents=[common], help="how to cite a run (a receipt, BibTeX, …)")
    p.add_argument("run", metavar="RUN", help="short id, sha256:… digest or <source>:<externalId>")
    p.add_argument("--format", choices=FORMATS, default="receipt", help="default: receipt")
    p.add_argument(
        "--server", metavar="URL", help="ask this server (default: read the data directory)"
    )
    p.add_argument(
        "--base",
        metavar="URL",
        default="http://127.0.0.1:8000",
        help="with --data: the public address the permalink names (default http://127.0.0.1:8000)",
    )
    p.set_defaults(handler=_cite)

    c = sub.add_parser(
        "check-citation",
        parents=[common],
        help="check a plain citation (record, digest, access date) against the log",
    )
    c.add_argument("run", metavar="RUN", help="the cited record: any run reference")
    c.add_argument("--digest", required=True, help="the cited digest, sha256:<hex>")
    c.add_argument("--accessed", required=True, help="the access date, YYYY-MM-DD")
    c.add_argument("--server", metavar="URL", help="ask this server (default: the data directory)")
    c.set_defaults(handler=_check)

    v = sub.add_parser("verify-citation", parents=[common], help="check a citation receipt offline")
    v.add_argument("file", type=Path, metavar="FILE", help="the receipt")
    v.add_argument(
        "--log-key",
        required=True,
        type=Path,
        metavar="VKEY",
        help="a file holding the log's vkey (as `benchproof log key` prints it)",
    )
    v.set_defaults(handler=_verify)


def _cite(args: argparse.Namespace) -> int:
    if args.server:
        try:
            response = httpx.get(
                args.server.rstrip("/") + run_path(args.run, "citation"),
                params={"format": args.format},
                timeout=30,
            )
        except httpx.HTTPError as exc:
            raise UsageError(f"cannot reach {args.server}: {exc}") from None
        if response.status_code != 200:
            raise UsageError(
                f"{args.server} answered {response.status_code}: {response.text[:200]}"
            )
        sys.stdout.buffer.write(response.content)
        return 0
    from service.ledger import Ledger

    with Ledger.open(args.data) as ledger:
        store = ledger.store
        body, _ = citation(ledger, store.session, store, args.run, args.format, base=args.base)
    sys.stdout.buffer.write(body)
    return 0


def _check(args: argparse.Namespace) -> int:
    """Exit 0 when the citation holds, 1 when it does not; the answer as JSON on stdout."""
    if args.server:
        params = {"run": args.run, "digest": args.digest, "accessed": args.accessed}
        with Client(args.server) as client:
            body = client.get("/v1/citations/check?" + urlencode(params)).body
    else:
        from service.ledger import Ledger

        with Ledger.open(args.data) as ledger:
            store = ledger.store
            checked = check_citation(store.session, store, args.run, args.digest, args.accessed)
            body = msgspec.to_builtins(checked)
    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(body), indent=2) + b"\n")
    return 0 if body.get("valid") else 1


def _verify(args: argparse.Namespace) -> int:
    try:
        data = args.file.read_bytes()
        log_key = parse_vkey(args.log_key.read_text(encoding="utf-8").strip())
    except OSError as exc:
        raise UsageError(f"cannot read {exc.filename}: {exc.strerror}") from None
    except (KeyringError, UnicodeDecodeError) as exc:
        raise UsageError(f"--log-key {args.log_key}: not a vkey: {exc}") from None
    try:
        verified = verify_receipt(data, log_key)
    except ReceiptInvalid as exc:
        sys.stderr.write(f"benchproof: citation does not verify: {exc}\n")
        return 1
    sys.stdout.write(verified.summary() + "\n")
    return 0
