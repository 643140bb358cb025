"""``benchproof keygen OUT`` and ``benchproof keys register``: a key of one's own, and its
registration with a server.

Registration is proof of possession: the server issues a single-use challenge for the key id, and
the ``key.registered.v1`` event that names it is signed (DSSE) by the key it registers.
"""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path

import msgspec

from events.entries import EVENT_PAYLOAD_TYPE
from events.types import EVENT_ENCODER, KeyRegistered
from keys import encode_envelope, generate_key_file, load_private_key, sign_envelope, vkey
from keys.notekeys import valid_key_name
from service.client import Answer, Client, default_server
from service.commands.base import Sub
from service.errors import UsageError

__all__ = ["register", "server_option", "write_answer"]


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "keygen",
        parents=[common],
        help="create an Ed25519 key file (0600); print its key id, then its vkey",
    )
    p.add_argument("out", metavar="OUT", type=Path, help="the new key file (never overwritten)")
    p.add_argument("--name", default="key", help="the key name in the printed vkey (default: key)")
    p.set_defaults(handler=_keygen)

    keys = sub.add_parser("keys", parents=[common], help="register a key with a server")
    keysub = keys.add_subparsers(dest="keys_command", metavar="WHAT", parser_class=type(keys))
    keysub.required = True
    p = keysub.add_parser(
        "register",
        parents=[common, server_option()],
        help="register a community key (signed by itself, over a challenge the server issues)",
    )
    p.add_argument("--key", required=True, type=Path, metavar="FILE", help="the private key file")
    p.add_argument("--name", required=True, help="the key's public name (unique on the server)")
    p.set_defaults(handler=_register)


def server_option() -> argparse.ArgumentParser:
    """A parent parser with ``--server URL``, for every command that talks to a server."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--server",
        metavar="URL",
        default=default_server(),
        help="the Benchproof server (default: $BENCHPROOF_SERVER or http://127.0.0.1:8000)",
    )
    return parent


def write_answer(answer: Answer) -> None:
    """Print a server's answer as indented JSON on stdout."""
    encoded = msgspec.json.encode(answer.body)
    sys.stdout.buffer.write(msgspec.json.format(encoded, indent=2) + b"\n")


def _key_name(name: str) -> str:
    if not valid_key_name(name):
        raise UsageError(f"invalid key name {name!r}: it must be non-empty, without spaces or '+'")
    return name


def _keygen(args: argparse.Namespace) -> int:
    name = _key_name(args.name)  # checked first: a bad name must not leave a key file behind
    key = generate_key_file(args.out)
    print(key.key_id)
    print(vkey(name, key.public))
    return 0


def _register(args: argparse.Namespace) -> int:
    name = _key_name(args.name)
    key = load_private_key(args.key)  # refuses a file group or others may read
    with Client(args.server) as client:
        issued = client.post("/v1/keys/challenges", {"keyId": key.key_id})
        event = KeyRegistered(
            keyId=key.key_id,
            publicKey=base64.b64encode(key.public.raw).decode("ascii"),
            role="community",
            name=name,
            challenge=issued.text("challenge"),
        )
        envelope = sign_envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), key)
        answer = client.post("/v1/keys", content=encode_envelope(envelope))
    write_answer(answer)
    sys.stderr.write(
        f"benchproof: registered key {key.key_id} as {name!r} at entry {answer.body.get('index')}\n"
    )
    return 0
