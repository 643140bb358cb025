"""``benchproof keygen OUT``, ``benchproof keys register``, ``keys revoke`` and ``keys grant``:
a key of one's own, its registration with a server, its revocation (by itself or an operator),
and an operator's grant of the rerunner role.

Registration is proof of possession: the server issues a single-use challenge for the key id, and
the ``key.registered.v1`` event that names it is signed (DSSE) by the key it registers. A key
revokes itself the same way, with its own envelope over the ``key.revoked.v1`` event.
"""

from __future__ import annotations

import argparse
import base64
import sys

import msgspec

from events.entries import EVENT_PAYLOAD_TYPE
from events.types import EVENT_ENCODER, Event, KeyRegistered, KeyRevoked
from keys import (
    SigningKey,
    encode_envelope,
    generate_key_file,
    load_private_key,
    sign_envelope,
    vkey,
)
from keys.notekeys import valid_key_name
from service.app.keylist import SHORT_KEY
from service.commands.base import Sub, local_path, plain
from service.console.client import Answer, Client, default_server
from service.errors import UsageError

__all__ = ["register", "server_option", "signed_event", "token_option", "write_answer"]


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "keygen",
        parents=[common],
        help="create an Ed25519 key file (0600); print its key id, then its vkey",
    )
    p.add_argument(
        "out", metavar="OUT", type=local_path, help="the new key file (never overwritten)"
    )
    p.add_argument("--name", default="key", help="the key name in the printed vkey (default: key)")
    p.set_defaults(handler=_keygen)

    keys = sub.add_parser(
        "keys", parents=[common], help="register, revoke or grant a role to a key on a server"
    )
    keysub = keys.add_subparsers(dest="keys_command", metavar="WHAT", parser_class=type(keys))
    keysub.required = True
    p = keysub.add_parser(
        "register",
        parents=[common, server_option()],
        help="register a community key (signed by itself, over a challenge the server issues)",
    )
    p.add_argument(
        "--key", required=True, type=local_path, metavar="FILE", help="the private key file"
    )
    p.add_argument("--name", required=True, help="the key's public name (unique on the server)")
    p.set_defaults(handler=_register)

    p = keysub.add_parser(
        "revoke",
        parents=[common, server_option()],
        help="revoke a key: by itself (--key) or by an operator (--token)",
    )
    p.add_argument(
        "key_id", metavar="KEYID", help="the key's id (64 hex) or its short id (12 or more)"
    )
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--key", type=local_path, metavar="FILE", help="the key's own private key file"
    )
    who.add_argument("--token", help="an operator token (the index signs the revocation)")
    p.add_argument("--reason", default="revoked by its holder", help="why (kept in the log)")
    p.set_defaults(handler=_revoke)

    p = keysub.add_parser(
        "grant",
        parents=[common, server_option(), token_option()],
        help="give a community key the rerunner role (operators only)",
    )
    p.add_argument(
        "key_id", metavar="KEYID", help="the key's id (64 hex) or its short id (12 or more)"
    )
    p.add_argument("--role", required=True, choices=("rerunner",), help="the role to give")
    p.set_defaults(handler=_grant)


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


def token_option() -> argparse.ArgumentParser:
    """A parent parser with a required ``--token T`` (an operator token)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--token", required=True, help="an operator token")
    return parent


def signed_event(event: Event, key: SigningKey) -> bytes:
    """The JSON of ``key``'s DSSE envelope over the encoded ``event``."""
    return encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), key))


def write_answer(answer: Answer) -> None:
    """Print a server's answer as indented JSON on stdout."""
    encoded = msgspec.json.encode(answer.body)
    sys.stdout.buffer.write(msgspec.json.format(encoded, indent=2) + b"\n")


def recorded(answer: Answer, done: str) -> int:
    """Print the answer of a write (``write_answer``), say on stderr what was ``done`` and at
    which entry, and exit 0."""
    write_answer(answer)
    sys.stderr.write(f"benchproof: {done} at entry {answer.body.get('index')}\n")
    return 0


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
        answer = client.post("/v1/keys", content=signed_event(event, key))
    return recorded(answer, f"registered key {key.key_id} as {name!r}")


def _full_id(client: Client, named: str) -> tuple[str, str]:
    """The full id and name of the key ``named`` (its id, or its short id: the first 12 or more
    hex digits, as pages show it), as the server knows it. A write names the full id: the
    server never resolves a short one for a grant or a revocation, and the command says which
    key it changed, whole.

    Raises:
        UsageError: ``named`` is no id or short id. NotFound: the server knows no such key.
    """
    named = named.strip().lower()
    if len(named) < SHORT_KEY or len(named) > 64 or not all(c in "0123456789abcdef" for c in named):
        raise UsageError(
            f"{named!r} is not a key id: 64 hex digits, or its first 12 or more (its short id)"
        )
    found = client.get(f"/v1/keys/{named}").body
    return str(found.get("keyId", named)), plain(str(found.get("name", "")), 64)


def _revoke(args: argparse.Namespace) -> int:
    if args.key is not None:
        key = load_private_key(args.key)  # refuses a file group or others may read
        named = args.key_id.strip().lower()
        if len(named) < SHORT_KEY or not key.key_id.startswith(named):
            raise UsageError(f"{args.key} holds key {key.key_id}, not {args.key_id}")
        event = KeyRevoked(keyId=key.key_id, reason=args.reason)
        with Client(args.server) as client:
            answer = client.post(
                f"/v1/keys/{key.key_id}/revocation", content=signed_event(event, key)
            )
        return recorded(answer, f"revoked key {key.key_id}")
    with Client(args.server, token=args.token) as client:
        key_id, name = _full_id(client, args.key_id)
        answer = client.post(f"/v1/keys/{key_id}/revocation", {"reason": args.reason})
    return recorded(answer, f"revoked key {key_id} ({name})")


def _grant(args: argparse.Namespace) -> int:
    with Client(args.server, token=args.token) as client:
        key_id, name = _full_id(client, args.key_id)
        answer = client.post(f"/v1/keys/{key_id}/grants", {"role": args.role})
    return recorded(answer, f"granted {args.role} to key {key_id} ({name})")
