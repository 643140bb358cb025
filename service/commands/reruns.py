"""``benchproof rerun request RUN`` (an operator asks for an index-controlled rerun) and
``benchproof rerun-worker`` (a rerunner's worker: claims the pending requests whose environment
it matches, runs the harness on each, posts the measurement).

The worker speaks the harness contract ``benchproof-harness/v1`` (``service/harness``): it
writes the input (the run's manifests, the samples asked for, the time limit) to the harness's
stdin, kills it past the time limit, and reads one JSON result from its stdout. A harness that
crashes, hangs, prints something else or cannot run the bundle (exit 2) is reported, and the
worker posts nothing for that request (its claim runs out and the request is offered again).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from events.canonical import canonical_bytes
from events.entries import INTOTO_PAYLOAD_TYPE, format_instant
from events.types import RERUN_PREDICATE_V2, RerunClaimedV2
from keys import SigningKey, encode_envelope, load_private_key, sign_envelope
from service.commands.base import Sub, local_path
from service.commands.keys import recorded, server_option, signed_event, token_option
from service.console.client import Client, run_path
from service.errors import NotFound, ServiceError, UsageError
from service.harness.contract import CONTRACT
from service.harness.environment import detect, matches
from service.harness.run import run_harness

__all__ = ["register"]

DEFAULT_HARNESS = f"{shlex.quote(sys.executable)} -m service.harness.cpu"


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    server = server_option()
    p = sub.add_parser("rerun", parents=[common], help="index-controlled reruns")
    rsub = p.add_subparsers(dest="rerun_command", metavar="WHAT", parser_class=type(p))
    rsub.required = True
    q = rsub.add_parser(
        "request", parents=[common, server, token_option()], help="ask for a rerun of a run"
    )
    q.add_argument("run", metavar="RUN", help="short id, sha256:… digest or <source>:<externalId>")
    q.add_argument("--reason", required=True, help="why (at most 1024 bytes of UTF-8)")
    q.set_defaults(handler=_request)

    w = sub.add_parser(
        "rerun-worker",
        parents=[common, server],
        help="claim pending reruns this machine can run, run the harness, post the results",
    )
    w.add_argument(
        "--key", required=True, type=local_path, metavar="FILE", help="a rerunner key file"
    )
    w.add_argument(
        "--harness",
        metavar="CMD",
        default=DEFAULT_HARNESS,
        help="the harness command (default: the shipped NumPy CPU harness)",
    )
    w.add_argument(
        "--environment", type=local_path, metavar="FILE", help="declare this environment"
    )
    w.add_argument("--once", action="store_true", help="handle what is pending, then exit")
    w.add_argument("--samples", type=int, default=20, help="samples to ask for (default 20)")
    w.add_argument(
        "--time-limit", type=float, default=300.0, help="seconds per harness run (default 300)"
    )
    w.add_argument("--lease", type=float, default=900.0, help="lease seconds (default 900)")
    w.add_argument("--poll", type=float, default=10.0, help="seconds between polls (default 10)")
    w.set_defaults(handler=_worker)


def _request(args: argparse.Namespace) -> int:
    with Client(args.server, token=args.token) as client:
        answer = client.post(run_path(args.run, "reruns"), {"reason": args.reason})
    return recorded(answer, f"requested a rerun of {args.run}")


def _say(text: str) -> None:
    sys.stderr.write(f"benchproof: {text}\n")


def _environment(path: Path | None) -> dict[str, str]:
    if path is None:
        return detect()
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--environment {path}: {exc}") from None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise UsageError(f"--environment {path}: not a JSON object of strings")
    return found


def _worker(args: argparse.Namespace) -> int:
    key = load_private_key(args.key)  # refuses a file group or others may read
    environment = _environment(args.environment)
    failures = 0
    with Client(args.server, timeout=60) as client:
        known = False
        while True:
            try:
                if not known:
                    _known_rerunner(client, key, args.server)
                    known = True
                    model, kind = environment.get("model"), environment.get("kind")
                    _say(f"worker {key.key_id[:12]} on {model} ({kind})")
                items = client.get("/v1/reruns?state=pending").body.get("items", [])
                _say_held(client, key)
            except _NotARerunner:
                raise
            except ServiceError as exc:  # the server is away: --once ends, a worker waits
                if args.once:
                    raise
                _say(f"{exc}; polling again in {args.poll:g} s")
                items = []
            mine = [i for i in items if i.get("needs") and matches(i["needs"], environment)]
            if len(mine) < len(items):
                _say(f"{len(items) - len(mine)} pending request(s) need another environment")
            for item in mine:
                try:
                    _handle(client, key, environment, item, args)
                except ServiceError as exc:  # refused, gone or failed: on to the next one
                    failures += 1
                    _say(f"request {item['requestId'][:19]}…: {exc}")
            if args.once:
                return 0 if failures == 0 else 1
            time.sleep(args.poll)


class _NotARerunner(UsageError):
    """The server does not know the worker's key, or not as a rerunner's (exit 2)."""


def _known_rerunner(client: Client, key: SigningKey, server: str) -> None:
    """The server must know the worker's key, as a rerunner's: else nothing it claims would be
    taken, and the worker says so once and stops (a server that cannot be reached is asked
    again, as the polling does).

    Raises:
        _NotARerunner: the server does not know the key, or it is not a rerunner's.
    """
    try:
        found = client.get(f"/v1/keys/{key.key_id}").body
    except NotFound:
        raise _NotARerunner(
            f"{server} does not know the key {key.key_id[:12]}: register it (benchproof keys"
            " register --key FILE --name NAME) and have an operator grant it the rerunner role"
        ) from None
    role = found.get("role")
    if role != "rerunner":
        raise _NotARerunner(
            f"the key {key.key_id[:12]} is a {role} key, not a rerunner's: an operator grants the"
            f" role (benchproof keys grant {key.key_id} --role rerunner)"
        )


def _say_held(client: Client, key: SigningKey) -> None:
    """The requests this worker's key holds a lease on, and until when (a request it claimed
    is offered to no other worker until then)."""
    claimed = client.get("/v1/reruns?state=claimed").body.get("items", [])
    for item in claimed:
        if item.get("claimer") == key.key_id:
            _say(
                f"this key holds {item['requestId'][:19]}… (run {item['runDigest'][:19]}…)"
                f" until {item.get('leaseUntil')}"
            )


def _handle(
    client: Client,
    key: SigningKey,
    environment: dict[str, str],
    item: dict[str, Any],
    args: argparse.Namespace,
) -> None:
    request_id, run = item["requestId"], item["runDigest"]
    until = datetime.now(UTC) + timedelta(seconds=args.lease)
    claim = RerunClaimedV2(
        runDigest=run,
        requestId=request_id,
        worker=key.key_id,
        leaseUntil=format_instant(until),
        environment=environment,
    )
    client.post(f"/v1/reruns/{request_id}/claim", content=signed_event(claim, key))
    _say(f"claimed {request_id[:19]}… (run {run[:19]}…) until {claim.leaseUntil}")
    bundle = client.get(f"/v1/reruns/{request_id}/bundle").body
    harness_input = {
        "contract": CONTRACT,
        "runDigest": run,
        "requestId": request_id,
        "minSamples": max(args.samples, int(item.get("minSamples") or 0)),
        "timeLimitSeconds": args.time_limit,
        "manifests": bundle.get("manifests", {}),
    }
    output = run_harness(shlex.split(args.harness), harness_input, args.time_limit)
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"/runs/{run}", "digest": {"sha256": run.removeprefix("sha256:")}}],
        "predicateType": RERUN_PREDICATE_V2,
        "predicate": {
            "requestId": request_id,
            "samples": list(output.samplesNs),
            "correctness": msgspec.to_builtins(output.correctness),
            "environment": msgspec.to_builtins(output.environment),
            "harness": msgspec.to_builtins(output.harness),
        },
    }
    envelope = sign_envelope(INTOTO_PAYLOAD_TYPE, canonical_bytes(statement), key)
    answer = client.post(f"/v1/reruns/{request_id}/result", content=encode_envelope(envelope))
    _say(
        f"posted {len(output.samplesNs)} samples for {request_id[:19]}… at entry "
        f"{answer.body.get('index')} (correctness {'passed' if output.correctness.passed else 'failed'})"
    )
