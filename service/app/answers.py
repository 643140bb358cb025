"""Signed answers kept and checked: fetch a view from a server with its signature
(``fetch_signed``: what ``runs show --server URL --json`` prints), and check a saved answer
(``verify_saved``: what ``benchproof verify-answer`` does): the log key's signature offline and,
given a data directory holding the log, the answer recomputed there at the same tree size.

Recomputing runs the same HTTP app in this process over that directory (nothing listens on a
port) and asks it the saved target with ``asOf`` set to the saved tree size. A route that takes
no ``asOf`` answers as of its log's current size: it can be checked only against a log of exactly
the saved size (the local answer's own ``Benchproof-Tree-Size`` says which size it reflects).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlencode

import msgspec

from keys import NoteVerifier
from service.console.client import Client, Fetched
from service.core.config import DataDir
from service.errors import UsageError
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

__all__ = ["Checked", "fetch_signed", "pinned_target", "recompute", "verify_saved"]

_ATTEMPTS = 3


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
                return _saved(client.base_url, got, signature)
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


class Checked(NamedTuple):
    """A saved answer that checked out; ``replayed``: whether it was also recomputed from a
    local log and found equal."""

    answer: SavedAnswer
    replayed: bool

    def summary(self) -> str:
        a = self.answer
        said = (
            f"ok: the log {a.origin} signed this answer to GET {a.target} at tree size {a.treeSize}"
        )
        if self.replayed:
            said += "; the local log gives the same answer at that size"
        return said


def verify_saved(answer: SavedAnswer, key: NoteVerifier, data: Path | None = None) -> Checked:
    """Check ``answer``: its body digest and the log key's signature; with ``data`` (a data
    directory holding the log at least up to the answer's tree size), also that the answer
    recomputed there at that size is the same JSON value. A body that fails its signature is
    compared too, when it can be, so that the error names the first field that differs.

    Raises:
        AnswerInvalid: ``body``/``signature`` (see ``check_saved``), or ``difference``: the
            local log answers otherwise (naming the first field that differs).
        UsageError: no log in ``data``, or one that cannot answer as of that size (too small,
            or a route that answers only "now" over a log of another size).
    """
    if data is not None and not DataDir(data).exists():
        raise UsageError(f"no log in {data}: --data names the log to recompute the answer from")
    try:
        check_saved(answer, key)
    except AnswerInvalid as exc:
        if data is None:
            raise
        try:
            differs = _difference(answer, data)
        except (UsageError, AnswerInvalid):
            raise exc from None
        if differs is None:
            raise
        raise AnswerInvalid(exc.check, f"{_reason(exc)}; {differs}") from None
    if data is None:
        return Checked(answer, replayed=False)
    differs = _difference(answer, data)
    if differs is not None:
        raise AnswerInvalid("difference", differs)
    return Checked(answer, replayed=True)


def _reason(exc: AnswerInvalid) -> str:
    return exc.detail.removeprefix(exc.check + ": ")


def _difference(answer: SavedAnswer, data: Path) -> str | None:
    """How the answer the log in ``data`` gives at the saved tree size differs from the saved
    one (the first differing field), or None when they are the same JSON value.

    Raises:
        UsageError: the local log cannot answer as of that size.
        AnswerInvalid: (``difference``) a body that is not JSON.
    """
    status, body, size = recompute(data, answer)
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


def recompute(data: Path, answer: SavedAnswer) -> tuple[int, bytes, int]:
    """The answer the log in ``data`` gives to the saved answer's target as of its tree size:
    the status, the body and the tree size the local answer reflects (its own
    ``Benchproof-Tree-Size``; the log's current size for a route that takes no ``asOf``).

    Raises:
        NotInitialised: no log in ``data``.
        UsageError: the local log is smaller than the answer's tree size.
    """
    from litestar.testing import TestClient

    from service.core.config import Settings
    from service.core.ledger import open_log
    from service.web.app import create_app
    from service.web.logs import configure_logging

    # The app's request lines and its test client's would land in this command's output.
    configure_logging(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    with open_log(data) as ledger:
        local = ledger.store.size
        if local < answer.treeSize:
            raise UsageError(
                f"the log in {data} holds {local} entries, fewer than the answer's tree size "
                f"{answer.treeSize}"
            )
        # Links in answers name the server they were asked at: the local app names the same.
        app = create_app(Settings(data=data, public_url=answer.server), ledger=ledger)
        with TestClient(
            app=app, base_url="http://benchproof.invalid", raise_server_exceptions=False
        ) as client:
            response = client.get(pinned_target(answer.target, answer.treeSize))
        size_text = response.headers.get(TREE_SIZE_HEADER, "")
        size = int(size_text) if size_text.isdigit() else local
        return response.status_code, response.content, size
