"""The witness's HTTP interface (C2SP tlog-witness v1): ``POST /add-checkpoint``, and ``GET /``,
what it is and which logs it follows (JSON)."""

from __future__ import annotations

import threading
from typing import Any

from litestar import Litestar, Response, get, post

from service.witness.core import MAX_BODY, Witness

__all__ = ["witness_app"]


def witness_app(witness: Witness) -> Litestar:
    """An app serving ``witness``. Requests are checked one at a time (the database's
    transaction makes each check and write atomic; the lock keeps one connection's
    transactions apart)."""
    lock = threading.Lock()

    @post("/add-checkpoint", sync_to_thread=True, status_code=200)
    def add_checkpoint(body: bytes) -> Response[bytes]:
        with lock:
            answer = witness.add_checkpoint(body)
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)

    @get("/", sync_to_thread=True)
    def about() -> dict[str, Any]:
        with lock:
            logs = witness.logs()
        return {
            "name": witness.signer.name,
            "vkey": witness.signer.vkey,
            "protocol": "https://c2sp.org/tlog-witness",
            "logs": [{"origin": origin, "cosignedSize": size} for origin, size in logs],
        }

    return Litestar(
        route_handlers=[add_checkpoint, about],
        request_max_body_size=MAX_BODY,
        openapi_config=None,
    )
