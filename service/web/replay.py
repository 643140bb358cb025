"""Recomputing a saved signed answer from a local log: the HTTP app of this process over the data
directory (nothing listens on a port), asked the saved target as of the saved tree size. The
edge's half of ``benchproof verify-answer --data DIR``: ``service.app.answers.verify_saved``
takes it as the ``recompute`` of its ``Replay``."""

from __future__ import annotations

import logging
from pathlib import Path

from litestar.testing import TestClient

from service.app.answers import Recomputed, Replay, pinned_target
from service.core.config import Settings
from service.core.ledger import open_log
from service.errors import UsageError
from service.web.app import create_app
from service.web.logs import configure_logging
from verifier.answers import TREE_SIZE_HEADER, SavedAnswer

__all__ = ["recompute", "replay"]


def recompute(data: Path, answer: SavedAnswer) -> Recomputed:
    """The answer the log in ``data`` gives to the saved answer's target as of its tree size:
    the status, the body and the tree size the local answer reflects (its own
    ``Benchproof-Tree-Size``; the log's current size for a route that takes no ``asOf``).

    Raises:
        NotInitialised: no log in ``data``.
        UsageError: the local log is smaller than the answer's tree size.
    """
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
        return Recomputed(response.status_code, response.content, size)


def replay(data: Path) -> Replay:
    """The replay of saved answers from the log in ``data``, recomputed here (``recompute``)."""
    return Replay(data, recompute)
