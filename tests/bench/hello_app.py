"""The peer for the HTTP benchmark: a litestar hello-world, served the same way as ours."""

from __future__ import annotations

from litestar import Litestar, get


@get("/")
async def hello() -> dict[str, str]:
    return {"hello": "world"}


app = Litestar([hello])
