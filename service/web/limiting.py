"""Rate limits at the HTTP edge: which client a request comes from, and the counting every
public write does before it appends (``service.shared.limits``: per client address always, per key
once a signed request's signature verified).

The client address is the peer's, unless the peer is a configured trusted proxy: then it is
the first address from the right of ``X-Forwarded-For`` that is not a trusted proxy (the
addresses to its left were written by the client, who may write anything).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from litestar import Request
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency

from service.shared.limits import RateLimiter

__all__ = ["Gate", "GateDep", "Quota", "client_address"]


def _normal(address: str) -> str:
    """An IP address in its canonical text (``::ffff:…`` forms, zeros), other text as it is."""
    try:
        return str(ipaddress.ip_address(address.strip()))
    except ValueError:
        return address.strip()


def client_address(request: Request[Any, Any, Any], trusted: frozenset[str]) -> str:
    """The address the request comes from (see the module's docstring)."""
    peer = _normal(request.client.host if request.client is not None else "")
    if peer not in trusted:
        return peer
    hops = [
        _normal(hop) for hop in ",".join(request.headers.getall("x-forwarded-for", [])).split(",")
    ]
    hops = [hop for hop in hops if hop]
    for hop in reversed(hops):
        if hop not in trusted:
            return hop
    return hops[0] if hops else peer


class Quota:
    """The counting of one write request, from ``address``."""

    def __init__(self, limiter: RateLimiter, address: str) -> None:
        self._limiter = limiter
        self.address = address

    def anonymous(self) -> None:
        """Count an unsigned write against the client address.

        Raises:
            RateLimited: over a limit; nothing was counted.
        """
        self._limiter.hit([("address", self.address)])

    def admit(self, key_id: str) -> None:
        """Count a signed write against its key and the client address (``service.app``'s
        ``Admit``, called once the signature verified).

        Raises:
            RateLimited: over a limit; nothing was counted.
        """
        self._limiter.hit([("key", key_id), ("address", self.address)])

    async def admit_async(self, key_id: str) -> None:
        """``admit`` for a handler on the event loop: the count is a transaction on the
        limits' database, which may wait for another process's count, so it runs in a worker
        thread (and not at all when no limit is set).

        Raises:
            RateLimited: over a limit; nothing was counted.
        """
        if self._limiter.limits.any():
            await sync_to_thread(self.admit, key_id)


class Gate:
    """The app's rate limiter and the proxies whose ``X-Forwarded-For`` it believes."""

    def __init__(self, limiter: RateLimiter, trusted_proxies: Iterable[str]) -> None:
        self.limiter = limiter
        self.trusted = frozenset(_normal(p) for p in trusted_proxies)

    def quota(self, request: Request[Any, Any, Any]) -> Quota:
        """The counting of ``request``, by its client address."""
        return Quota(self.limiter, client_address(request, self.trusted))


GateDep = NamedDependency[Gate]
