"""``benchproof attest RUN`` and ``benchproof report RUN``: a signed statement about a run, and
an anonymous report of a problem with one, posted to a server; ``withdraw`` (the attester takes
its attestation back, signed by the same key), and the operator's ``hide`` and ``resolve``.
None of them deletes anything: the log keeps every statement and says what became of it.

An attestation is an in-toto Statement v1 about the run (its subject is the run's digest, which
the server is asked for first), with the predicate ``https://benchproof.dev/attestation/v1``,
signed (DSSE) by the attester's registered key. Its bytes are canonical JSON (RFC 8785), so the
same statement posted twice is the same entry: the server answers the existing one.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

import msgspec

from events.canonical import canonical_bytes
from events.entries import INTOTO_PAYLOAD_TYPE
from events.types import AttestationWithdrawn
from keys import encode_envelope, load_private_key, sign_envelope
from service.app.attest import KINDS, statement_of
from service.app.report import REASONS
from service.commands.base import Sub, local_path
from service.commands.keys import (
    recorded,
    server_option,
    signed_event,
    token_option,
    write_answer,
)
from service.console.client import Client, run_path
from service.errors import NotFound, UsageError

__all__ = ["register", "statement"]

_RUN_HELP = "short id, sha256:… digest, kernelindex:<uuid> or <source>:<externalId>"


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    server = server_option()
    p = sub.add_parser(
        "attest", parents=[common, server], help="post a signed attestation about a run"
    )
    p.add_argument("run", metavar="RUN", help=_RUN_HELP)
    p.add_argument("--kind", required=True, choices=KINDS, help="what the attestation says")
    p.add_argument("--value", type=_number, help="a measured value")
    p.add_argument("--unit", help="the value's unit (with --value)")
    p.add_argument(
        "--statistic", help="the value's statistic (with --value; default: the run's primary one)"
    )
    p.add_argument(
        "--environment",
        type=local_path,
        metavar="FILE",
        help="a JSON object describing the environment",
    )
    p.add_argument(
        "--evidence-url",
        dest="evidence_urls",
        action="append",
        default=[],
        metavar="URL",
        help="an https URL of evidence (repeatable)",
    )
    p.add_argument("--note", help="free text (at most 4096 bytes of UTF-8)")
    p.add_argument(
        "--key", required=True, type=local_path, metavar="FILE", help="the private key file"
    )
    p.set_defaults(handler=_attest)

    p = sub.add_parser(
        "report", parents=[common, server], help="report a problem with a run (anonymous)"
    )
    p.add_argument("run", metavar="RUN", help=_RUN_HELP)
    p.add_argument("--reason", required=True, choices=REASONS, help="what is wrong")
    p.add_argument("--text", required=True, help="what you found (at most 4096 bytes of UTF-8)")
    p.set_defaults(handler=_report)

    p = sub.add_parser(
        "withdraw", parents=[common, server], help="take back an attestation (signed by its key)"
    )
    p.add_argument("attestation", metavar="ATTESTATION_ID", help="the attestation's id")
    p.add_argument("--reason", default="", help="why (kept in the log)")
    p.add_argument(
        "--key", required=True, type=local_path, metavar="FILE", help="the private key file"
    )
    p.set_defaults(handler=_withdraw)

    token = token_option()
    p = sub.add_parser(
        "hide", parents=[common, server, token], help="hide an attestation (operators only)"
    )
    p.add_argument("attestation", metavar="ATTESTATION_ID", help="the attestation's id")
    p.add_argument("--reason", required=True, help="why (kept in the log)")
    p.set_defaults(handler=_hide)

    p = sub.add_parser(
        "resolve", parents=[common, server, token], help="resolve or dismiss a report (operators)"
    )
    p.add_argument("report", metavar="REPORT_ID", help="the report's id")
    p.add_argument("--resolution", required=True, choices=("resolved", "dismissed"))
    p.add_argument("--note", required=True, help="what was done (kept in the log)")
    p.set_defaults(handler=_resolve)


def statement(run_digest: str, predicate: dict[str, Any]) -> bytes:
    """The canonical JSON bytes of the in-toto Statement v1 about the run ``run_digest``
    (``sha256:<hex>``), named by its permalink.

    Raises:
        CanonicalizationError: the predicate holds something that is not JSON.
    """
    return canonical_bytes(statement_of(run_digest, predicate))


def _number(text: str) -> int | float:
    """A finite JSON number: an integer stays one (``12``, not ``12.0``)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def _predicate(args: argparse.Namespace) -> dict[str, Any]:
    """The predicate the options describe, less the statistic ``--value`` may leave to the run."""
    if args.value is None and (args.unit is not None or args.statistic is not None):
        raise UsageError("--unit and --statistic describe a --value; give one")
    predicate: dict[str, Any] = {"kind": args.kind}
    for name, value in (
        ("value", args.value),
        ("unit", args.unit),
        ("statistic", args.statistic),
        ("note", args.note),
    ):
        if value is not None:
            predicate[name] = value
    if args.evidence_urls:
        predicate["evidenceUrls"] = args.evidence_urls
    if args.environment is not None:
        predicate["environment"] = _environment(args.environment)
    return predicate


def _environment(path: Path) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"cannot read --environment {path}: {exc.strerror}") from None
    except msgspec.DecodeError as exc:
        raise UsageError(f"--environment {path} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--environment {path} must hold a JSON object")
    return value


def _primary_statistic(run: dict[str, Any], ref: str) -> str:
    primary = run.get("primary")
    statistic = primary.get("statistic") if isinstance(primary, dict) else None
    if not isinstance(statistic, str) or not statistic:
        raise UsageError(f"run {ref} has no primary statistic; give --statistic")
    return statistic


def _attest(args: argparse.Namespace) -> int:
    # Everything local is checked before the server is asked anything.
    key = load_private_key(args.key)  # refuses a file group or others may read
    predicate = _predicate(args)
    with Client(args.server) as client:
        run = client.get(run_path(args.run))
        digest = run.text("runDigest")
        if args.value is not None and args.statistic is None:
            predicate["statistic"] = _primary_statistic(run.body, args.run)
        envelope = sign_envelope(INTOTO_PAYLOAD_TYPE, statement(digest, predicate), key)
        answer = client.post(run_path(digest, "attestations"), content=encode_envelope(envelope))
    write_answer(answer)
    where = f"{answer.body.get('id')} at entry {answer.body.get('index')}"
    if answer.status == 201:
        sys.stderr.write(f"benchproof: appended attestation {where}\n")
    else:
        sys.stderr.write(f"benchproof: the log already holds attestation {where}\n")
    return 0


def _report(args: argparse.Namespace) -> int:
    with Client(args.server) as client:
        answer = client.post(
            run_path(args.run, "reports"), {"reason": args.reason, "text": args.text}
        )
    return recorded(answer, f"report {answer.body.get('id')} filed")


_ATTESTATION_ID = re.compile(r"sha256:[0-9a-f]{64}\Z")


def _withdraw(args: argparse.Namespace) -> int:
    key = load_private_key(args.key)  # refuses a file group or others may read
    ref = args.attestation.strip()
    if not _ATTESTATION_ID.match(ref):
        raise UsageError(
            f"{ref!r} is not an attestation id: one is sha256: and 64 hex digits, as `runs"
            " attestations RUN` and the run's page list them"
        )
    with Client(args.server) as client:
        # What is withdrawn is checked before anything is signed: this key posted it. One the
        # index hid is not shown (404) but may still be withdrawn: the server then decides.
        try:
            found = client.get(f"/v1/attestations/{ref}").body
        except NotFound:
            found = None
        attester = str((found or {}).get("attestation", {}).get("attester", key.key_id))
        if attester != key.key_id:
            raise UsageError(
                f"attestation {ref[:19]}… was posted by the key {attester[:12]}, not by"
                f" {key.key_id[:12]} ({args.key}): only the key that posted it withdraws it"
            )
        event = AttestationWithdrawn(attestationId=ref, reason=args.reason)
        answer = client.post(f"/v1/attestations/{ref}/withdrawal", content=signed_event(event, key))
    return recorded(answer, f"withdrew attestation {ref}")


def _hide(args: argparse.Namespace) -> int:
    with Client(args.server, token=args.token) as client:
        answer = client.post(f"/v1/attestations/{args.attestation}/hidden", {"reason": args.reason})
    return recorded(answer, f"hid attestation {args.attestation}")


def _resolve(args: argparse.Namespace) -> int:
    with Client(args.server, token=args.token) as client:
        answer = client.post(
            f"/v1/reports/{args.report}/resolution",
            {"resolution": args.resolution, "note": args.note},
        )
    return recorded(answer, f"report {args.report} {args.resolution}")
