"""``benchproof cite RUN --format F`` (how to cite a run, from a data directory or a server) and
``benchproof verify-citation FILE --log-key VKEY`` (check a receipt offline: no network, no data
directory, only the file and the log's verifier key)."""

from __future__ import annotations

import argparse
import base64
import os
import sys
from urllib.parse import urlencode

import httpx
import msgspec

from events.checkpoints import parse_checkpoint_body
from events.errors import LogError, ProofError
from events.merkle import verify_consistency
from keys import KeyringError, VerificationError
from keys.notekeys import NoteVerifier
from keys.notes import open_note
from service.app.cite import FORMATS, OnlineCheck, check_citation, citation
from service.commands.base import (
    Sub,
    add_log_key,
    add_witness_options,
    local_path,
    plain,
    read_file,
    read_log_key,
    read_witnesses,
)
from service.console.client import DEFAULT_SERVER, SERVER_ENV, Client, run_path
from service.core.config import PUBLIC_URL_ENV
from service.errors import NotFound, NotInitialised, UsageError
from verifier.receipts import ReceiptInvalid, Statement, verify_receipt

__all__ = ["register"]


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("cite", parents=[common], help="how to cite a run (a receipt, BibTeX, …)")
    p.add_argument("run", metavar="RUN", help="short id, sha256:… digest or <source>:<externalId>")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="default: text (a reference to paste); receipt: the signed file `verify-citation`"
        " checks offline",
    )
    p.add_argument(
        "--server",
        metavar="URL",
        help="ask this server (default: $BENCHPROOF_SERVER unless --data is given, else read"
        " the data directory)",
    )
    p.add_argument(
        "--base",
        metavar="URL",
        default=None,
        help="with --data: the public address the permalink names (default:"
        f" ${PUBLIC_URL_ENV}, the address `serve` takes too, else {DEFAULT_SERVER})",
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
    v.add_argument("file", type=local_path, metavar="FILE", help="the receipt")
    v.add_argument(
        "--server",
        metavar="URL",
        help="also ask the log (online): consistency since, and what changed",
    )
    add_log_key(v)
    add_witness_options(v)
    v.set_defaults(handler=_verify)


def _cite(args: argparse.Namespace) -> int:
    server = args.server
    if server is None and not args.data_given:
        server = os.environ.get(SERVER_ENV) or None  # as `attest` and `keys` do
    if server:
        try:
            response = httpx.get(
                server.rstrip("/") + run_path(args.run, "citation"),
                params={"format": args.format},
                timeout=30,
            )
        except httpx.HTTPError as exc:
            raise UsageError(f"cannot reach {server}: {exc}") from None
        if response.status_code != 200:
            raise UsageError(f"{server} answered {response.status_code}: {_said(response)}")
        sys.stdout.buffer.write(response.content)
        return 0
    from service.core.ledger import open_log

    base = args.base or os.environ.get(PUBLIC_URL_ENV) or DEFAULT_SERVER
    try:
        opened = open_log(args.data)
    except NotInitialised:
        # Citing reads a log: an empty one made here would cite nothing.
        raise NotFound(
            f"no log in {args.data}: give the data directory of a log (--data DIR) or a server"
            f" (--server URL, or ${SERVER_ENV})"
        ) from None
    with opened as ledger:
        store = ledger.store
        body, _ = citation(ledger, store.session, store, args.run, args.format, base=base)
    sys.stdout.buffer.write(body)
    return 0


def _said(response: httpx.Response) -> str:
    """What a server's refusal says: a problem's detail, else the start of its body."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return str(detail) if detail else response.text[:200]


def _check(args: argparse.Namespace) -> int:
    """Exit 0 when the citation holds, 1 when it does not; the answer as JSON on stdout."""
    if args.server:
        params = {"run": args.run, "digest": args.digest, "accessed": args.accessed}
        with Client(args.server) as client:
            body = client.get("/v1/citations/check?" + urlencode(params)).body
    else:
        from service.core.ledger import open_log

        with open_log(args.data) as ledger:
            store = ledger.store
            checked = check_citation(store.session, store, args.run, args.digest, args.accessed)
            body = msgspec.to_builtins(checked)
    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(body), indent=2) + b"\n")
    return 0 if body.get("valid") else 1


def _verify(args: argparse.Namespace) -> int:
    data = read_file(args.file)
    log_key = read_log_key(args.log_key)
    witnesses, quorum = read_witnesses(args)
    try:
        verified = verify_receipt(data, log_key, witnesses, quorum)
        online = _online(args.server, data, verified.statement, log_key) if args.server else ""
    except ReceiptInvalid as exc:
        sys.stderr.write(f"benchproof: citation does not verify: {exc}\n")
        return 1
    sys.stdout.write(verified.summary() + "\n" + online)
    return 0


def _online(server: str, data: bytes, statement: Statement, log_key: NoteVerifier) -> str:
    """Ask the log that issued the receipt what changed since, and check what can be checked of
    its answer: its current checkpoint is signed by the same key, names the same origin, and is
    consistent with the receipt's. The rest (what changed) is the log's report, said so.

    Raises:
        ReceiptInvalid: the server refused the receipt, or its answer does not verify
            (``consistency``).
    """
    with Client(server) as client:
        try:
            body = client.post("/v1/citations/verify", content=data).body
        except (UsageError, NotFound) as exc:
            raise ReceiptInvalid("server", str(exc)) from None
    try:
        answer = msgspec.convert(body, OnlineCheck)
        now = parse_checkpoint_body(open_note(answer.checkpoint.encode(), [log_key]).text)
        if now.origin != log_key.name:
            raise ProofError("the server's checkpoint names another log")
        old_root = base64.b64decode(statement.root)
        proof = [base64.b64decode(h) for h in answer.consistencyProof]
        if now.size < statement.treeSize:
            raise ProofError("the log is smaller than the receipt's checkpoint")
        if now.size == statement.treeSize:
            if now.root != old_root:
                raise ProofError("the same size with another root: a fork")
        else:
            verify_consistency(statement.treeSize, now.size, old_root, now.root, proof)
    except (msgspec.ValidationError, ValueError, KeyringError, VerificationError, LogError) as exc:
        raise ReceiptInvalid("consistency", f"the server's answer does not verify: {exc}") from None
    since = answer.since
    said = [
        f"level now {plain(since.evidenceLevelNow)}",
        f"{since.attestationsAdded} attestation(s) and {since.reportsAdded} report(s) added",
    ]
    if since.supersededBy:
        said.append(f"superseded by {plain(since.supersededBy)}")
    if since.retracted:
        said.append(f"retracted: {plain(since.retracted)}")
    return (
        f"Online (checked): the log at {now.size} entries, signed by its key, is consistent "
        f"with the cited checkpoint of {statement.treeSize}; evidence level at access "
        f"{statement.evidenceLevel}. The log reports (not proven here): {'; '.join(said)}.\n"
    )
