"""Signed answers kept and checked: fetch a view from a server with its signature
(``fetch_signed``: what ``runs show --server URL --json`` prints), and check a saved answer
(``verify_saved``: what ``benchproof verify-answer`` does): the log key's signature offline and,
given a data directory holding the log, the answer recomputed there at the same tree size.

Recomputing is the edge's: the caller hands in a ``Replay``, the data directory and how to ask
the same HTTP app over it the saved target with ``asOf`` set to the saved tree size
(``pinned_target``; ``service.web.replay.recompute`` does it in this process, nothing listening
on a port). A route that takes no ``asOf`` answers as of its log's current size: it can be
checked only against a log of exactly the saved size (the local answer's own
``Benchproof-Tree-Size`` says which size it reflects).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlencode

import msgspec

from events.checkpoints import parse_checkpoint_body
from events.errors import LogError
from keys import KeyringError, MalformedNote, NoteVerifier, VerificationError
from keys.cosignatures import WitnessVerifier
from keys.notes import open_note
from service.console.client import Client, Fetched
from service.core.config import DataDir
from service.errors import NotFound, UsageError
from verifier.answers import (
    ABSENT,
    SIGNATURE_HEADER,
    TREE_SIZE_HEADER,
    AnswerInvalid,
    SavedAnswer,
    check_saved,
    first_difference,
    saved,
)
from verifier.witnessing import QuorumNotMet, Witnessed, count_witnesses

__all__ = [
    "Checked",
    "Recompute",
    "Recomputed",
    "Replay",
    "fetch_signed",
    "pinned_target",
    "verify_saved",
]

_ATTEMPTS = 3


class Recomputed(NamedTuple):
    """The answer a local log gives to a saved answer's target as of its tree size: the
    ``status``, the ``body`` and the tree ``size`` it reflects (its own ``Benchproof-Tree-Size``;
    the log's current size for a route that takes no ``asOf``)."""

    status: int
    body: bytes
    size: int


Recompute = Callable[[Path, SavedAnswer], Recomputed]
"""How the edge recomputes a saved answer from the log in a data directory (asking its target
as ``pinned_target`` names it). Raises ``UsageError`` when that log is smaller than the answer's
tree size, ``NotInitialised`` when there is none."""


class Replay(NamedTuple):
    """Where and how ``verify_saved`` recomputes an answer: the data directory holding the log
    (``data``) and the edge's ``recompute``."""

    data: Path
    recompute: Recompute


def fetch_signed(server: str, path: str, *, attempts: int = _ATTEMPTS) -> SavedAnswer:
    """``GET path`` from ``server``, kept as a saved answer. A read of "now" made while the log
    grew under it comes unsigned (the server could not say which size it reflects): it is asked
    again, up to ``attempts`` times.

    Raises:
        NotFound: the server answered 404.
        UsageError: any other refusal, no answer, or an answer without a signature (a server
            without the log key, or one that kept growing).
    """
    with Client(server) as client:
        for _ in range(attempts):
            got = client.fetch(path)
            signature = got.headers.get(SIGNATURE_HEADER.lower())
            if signature:
                answer = _saved(client.base_url, got, signature)
                return _with_checkpoint(client, answer)
    raise UsageError(
        f"{server} answered GET {path} without a {SIGNATURE_HEADER} header: it holds no log key, "
        "or its log grew while it answered (ask with --as-of)"
    )


def _saved(server: str, got: Fetched, signature: str) -> SavedAnswer:
    size_text = got.headers.get(TREE_SIZE_HEADER.lower(), "")
    if not size_text.isdigit():
        raise UsageError(f"{server} answered without a valid {TREE_SIZE_HEADER} header")
    origin = signature.partition(" ")[0]  # the log key's name is the log's origin
    try:
        return saved(server, origin, int(size_text), got.target, got.content, signature)
    except AnswerInvalid as exc:
        raise UsageError(f"{server} answered something that cannot be kept: {exc}") from None


def _with_checkpoint(client: Client, answer: SavedAnswer) -> SavedAnswer:
    """``answer`` with the server's latest checkpoint note (and the witnesses' cosignatures
    on it), read after the answer, so of its tree size or more; as it was if the server serves
    none."""
    try:
        got = client.fetch("/checkpoint")
        note = got.content.decode()
    except (UsageError, NotFound, UnicodeDecodeError):
        return answer
    return msgspec.structs.replace(answer, checkpoint=note)


def check_witnesses(
    answer: SavedAnswer,
    key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> Witnessed | None:
    """Whether at least ``quorum`` of ``witnesses`` (default: all) cosigned the checkpoint the
    answer was saved with, a checkpoint of the log ``key`` signed covering the answer's tree
    size. None when the answer carries no checkpoint and no witness is asked for.

    Raises:
        AnswerInvalid: (``witnesses``) no checkpoint, one that does not verify or does not
            cover the answer's size, or too few of the witnesses cosigned it.
    """
    if answer.checkpoint is None:
        if witnesses:
            raise AnswerInvalid(
                "witnesses",
                "the answer was saved without a checkpoint: no witness can have cosigned it",
            )
        return None
    note = answer.checkpoint.encode()
    try:
        body = parse_checkpoint_body(open_note(note, [key]).text)
    except (KeyringError, VerificationError, LogError) as exc:
        raise AnswerInvalid("witnesses", f"the saved checkpoint does not verify: {exc}") from None
    if body.origin != answer.origin or body.size < answer.treeSize:
        raise AnswerInvalid(
            "witnesses",
            f"the saved checkpoint ({body.origin}, {body.size} entries) does not cover the"
            f" answer's tree size {answer.treeSize}",
        )
    try:
        return count_witnesses(note, key, witnesses, quorum)
    except MalformedNote as exc:
        raise AnswerInvalid("witnesses", f"the saved checkpoint's signatures: {exc}") from None
    except QuorumNotMet as exc:
        raise AnswerInvalid("witnesses", exc.detail) from None


class Checked(NamedTuple):
    """A saved answer that checked out; ``replayed``: whether it was also recomputed from a
    local log and found equal."""

    answer: SavedAnswer
    replayed: bool
    witnessed: Witnessed | None = None

    def summary(self) -> str:
        a = self.answer
        said = (
            f"ok: the log {a.origin} signed this answer to GET {a.target} at tree size {a.treeSize}"
        )
        if self.replayed:
            said += "; the local log gives the same answer at that size"
        if self.witnessed is not None:
            said += ". " + self.witnessed.summary()
        return said


def verify_saved(
    answer: SavedAnswer,
    key: NoteVerifier,
    replay: Replay | None = None,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> Checked:
    """Check ``answer``: its body digest and the log key's signature; with ``replay`` (a data
    directory holding the log at least up to the answer's tree size, and how to recompute an
    answer there), also that the answer recomputed there at that size is the same JSON value. A body that fails its signature is
    compared too, when it can be, so that the error names the first field that differs.

    Raises:
        AnswerInvalid: ``body``/``signature`` (see ``check_saved``), or ``difference``: the
            local log answers otherwise (naming the first field that differs).
        UsageError: no log in the replay's data directory, or one that cannot answer as of
            that size (too small, or a route that answers only "now" over a log of another size).
    """
    if replay is not None and not DataDir(replay.data).exists():
        raise UsageError(
            f"no log in {replay.data}: --data names the log to recompute the answer from"
        )
    try:
        check_saved(answer, key)
    except AnswerInvalid as exc:
        if replay is None:
            raise
        try:
            differs = _difference(answer, replay)
        except (UsageError, AnswerInvalid):
            raise exc from None
        if differs is None:
            raise
        raise AnswerInvalid(exc.check, f"{_reason(exc)}; {differs}") from None
    witnessed = check_witnesses(answer, key, witnesses, quorum)
    if replay is None:
        return Checked(answer, replayed=False, witnessed=witnessed)
    differs = _difference(answer, replay)
    if differs is not None:
        raise AnswerInvalid("difference", differs)
    return Checked(answer, replayed=True, witnessed=witnessed)


def _reason(exc: AnswerInvalid) -> str:
    return exc.detail.removeprefix(exc.check + ": ")


def _difference(answer: SavedAnswer, replay: Replay) -> str | None:
    """How the answer the replay's log gives at the saved tree size differs from the saved
    one (the first differing field), or None when they are the same JSON value.

    Raises:
        UsageError: the local log cannot answer as of that size.
        AnswerInvalid: (``difference``) a body that is not JSON.
    """
    status, body, size = replay.recompute(replay.data, answer)
    if size != answer.treeSize:
        raise UsageError(
            f"GET {answer.target} takes no asOf: the local log answers as of its {size} "
            f"entries, not {answer.treeSize}; check it against a log of exactly that size"
        )
    if status != 200:
        return (
            f"at tree size {answer.treeSize} the local log answers {status}: "
            f"{body[:200].decode(errors='replace')}"
        )
    if body == answer.body.encode():
        return None
    try:
        ours: Any = msgspec.json.decode(body)
        theirs: Any = msgspec.json.decode(answer.body.encode())
    except msgspec.DecodeError as exc:
        raise AnswerInvalid("difference", f"an answer is not JSON: {exc}") from None
    found = first_difference(theirs, ours)
    if found is None:  # the same JSON value, encoded otherwise
        return None
    where, saved_value, local_value = found
    return (
        f"at tree size {answer.treeSize} the local log gives {where} = {_shown(local_value)}, "
        f"the saved answer {_shown(saved_value)}"
    )


def _shown(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 120 else text[:117] + "..."


def pinned_target(target: str, size: int) -> str:
    """``target`` asking as of ``size``: its ``asOf`` replaced (or added) by the size, the rest of
    the query kept in order."""
    path, _, query = target.partition("?")
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "asOf"]
    return path + "?" + urlencode([*pairs, ("asOf", str(size))])
