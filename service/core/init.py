"""``benchproof init``: create (or reuse) a data directory: its keys, its log and the genesis
entries that register the keys and record the default tolerance policy."""

from __future__ import annotations

import base64
import contextlib
from pathlib import Path

from events.errors import LogError
from events.stores import display_store, log_exists, open_reader, open_store, same_store
from events.types import Event, KeyRegistered, PolicyChanged
from keys import KeyFileError, SigningKey, generate_key_file, load_private_key
from keys.notekeys import valid_key_name
from projections.tolerance import DEFAULT_POLICY, POLICY_NAME
from service.core.config import DEFAULT_ORIGIN, DataDir
from service.core.ledger import Ledger
from service.core.logs import Clock, utcnow
from service.core.mirror import mirror_refusal, read_mirror
from service.core.signing import Signers
from service.errors import UsageError

__all__ = ["init_data_dir"]


def _key_event(key: SigningKey, role: str, name: str) -> tuple[Event, str]:
    public = base64.b64encode(key.public.raw).decode()
    return KeyRegistered(keyId=key.key_id, publicKey=public, role=role, name=name), key.key_id  # type: ignore[arg-type]


def _default_tolerance() -> tuple[Event, str]:
    """The tolerance policy every log starts with (``projections.tolerance.DEFAULT_POLICY``)."""
    policy = DEFAULT_POLICY
    event = PolicyChanged(
        policy=POLICY_NAME, version=policy.version, parameters=policy.parameters()
    )
    return event, POLICY_NAME


def init_data_dir(
    root: Path, *, origin: str | None = None, clock: Clock = utcnow, store: str | None = None
) -> tuple[Ledger, bool]:
    """Create (or reuse) a data directory: keys (0600), database, and the genesis entries that
    register the index key (self-signed) and the log key, and record the default tolerance
    policy. Idempotent. ``store``: the URL of the log's store (default: the directory's own
    SQLite file, or ``$BENCHPROOF_STORE``); given, it is recorded in the directory (``store``)
    for every later command. A directory that names another store already is pointed at
    ``store`` only when a log is there (copied by ``migrate-store``).

    Returns the open ledger and whether anything was created.

    Raises:
        LogError: the directory holds a log with another origin.
        KeyFileError: an existing key file is unusable.
        MirrorReadOnly: the directory is a mirror (it stays one).
    """
    mirror = read_mirror(root)
    if mirror is not None:
        raise mirror_refusal(
            mirror.origin,
            "`benchproof init` would make it a log of its own; it takes entries only from the "
            "origin (`benchproof import-log`)",
        )
    if origin and not valid_key_name(origin):
        raise UsageError(
            f"invalid origin {origin!r}: it names the log's key, so it must be non-empty UTF-8 "
            "with no spaces and no '+'"
        )
    data = DataDir(root, store)
    data.ensure()
    created = False
    recorded = data.recorded_store()
    url = data.store
    exists = log_exists(url)
    # Where this directory's log was until now: the store it recorded, else its own file.
    previous = recorded or data.own_store
    if not same_store(previous, url) and log_exists(previous):
        # Pointing the directory at another store is for its log copied there whole (by
        # `migrate-store`; its keys are checked against that log's when it opens): a new or an
        # older log there would take a second history signed by the same keys.
        if not exists:
            raise UsageError(
                f"{root} keeps its log in {display_store(previous)}, and {display_store(url)} "
                "holds no log: `benchproof migrate-store` copies a log between stores"
            )
        _check_holds(url, previous, root)
    opened = open_store(
        url, origin=origin if origin else None if exists else DEFAULT_ORIGIN, create=True
    )
    keys = {}
    try:
        for name, path in (("index", data.index_key), ("log", data.log_key)):
            if path.exists():
                keys[name] = load_private_key(path)
            elif opened.size > 0:
                # The log registered the key it held in its entries: a new key would not be one
                # it knows, and every later entry or checkpoint signed with it would fail.
                raise KeyFileError(
                    f"{path} is missing, but the log in {root} holds entries signed with the key "
                    "it held: restore that file (a new key would not be the one the log registered)"
                )
            else:
                keys[name] = generate_key_file(path)
                created = True
    except BaseException:
        opened.close()
        raise
    signers = Signers(keys["index"], keys["log"], opened.origin)
    ledger = Ledger(data, opened, signers, clock)
    if not same_store(url, previous) or (recorded is None and not same_store(url, data.own_store)):
        # Once the log opened with this directory's keys, and before anything is appended:
        # every later command finds it (the URL came from --store or $BENCHPROOF_STORE).
        data.record_store(url)
    if opened.size == 0:
        ledger.append(
            [
                _key_event(keys["index"], "index", "index"),
                _key_event(keys["log"], "log", opened.origin),
                _default_tolerance(),
            ]
        )
        created = True
    elif ledger.projections.position() != opened.size:
        raise LogError("projections are behind the log")
    return ledger, created


def _check_holds(url: str, previous: str, root: Path) -> None:
    """Refuse to point ``root`` at the log at ``url`` unless it holds the whole of the log at
    ``previous`` (the same leaves, so the same root at its size): an older copy would take
    new entries as a second history under the same keys.

    Raises:
        UsageError: it does not.
    """
    with (
        contextlib.closing(open_reader(previous)) as old,
        contextlib.closing(open_reader(url)) as new,
    ):
        size = old.refresh()
        if new.refresh() < size or new.root(size) != old.root(size):
            raise UsageError(
                f"{display_store(url)} does not hold the whole log of {root} ({size} entries in "
                f"{display_store(previous)}): run `benchproof migrate-store` again (it goes on "
                "from where the copy stopped), then point the directory at it"
            )
