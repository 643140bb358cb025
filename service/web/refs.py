"""Run references in paths: one path segment each, with ``/`` percent-encoded.

A reference may hold ``/`` (KernelBot's ``gpumode-kernelbot:submission/7``); in a URL it is sent
as ``%2F`` (``/v1/runs/gpumode-kernelbot:submission%2F7/history``), so that every resource of a
run is a route of its own with the reference as one segment (``/v1/runs/{ref}``,
``/v1/runs/{ref}/history``, ``/runs/{ref}``…): ``Routes`` reads them from the app's route table.

ASGI servers decode the path before the app routes it (uvicorn's ``scope["path"]`` is its
``raw_path`` unquoted), which would turn an encoded ``/`` back into a separator. So a request under
a run prefix is routed on a path rebuilt from what was sent (``Routes.routed``): each segment
decoded, and in the reference ``%`` and ``/`` escaped again (``%25``, ``%2F``), which ``ref_of``
undoes. The reference a handler sees is exactly the one sent.

Old links with a raw ``/`` in the reference (``/runs/gpumode-kernelbot:submission/7``, as earlier
versions of clients sent them and people saved them) keep working and get the same answer as
before (status, headers, body; a signed answer is signed over the target as sent): when more than
one segment follows the prefix, the reference is all of them but a last one that names a resource
of the request's method (``history`` for a ``GET``, ``reports`` for a ``POST``…), as before; a
``GET`` of a resource only posted to (``reports``) is routed to it too, and answers 405 with
``Allow``. This
is the one place a path's last segment is read so, and only for links a reference spreads over
several segments; an encoded ``/`` is always part of the reference. Permalinks
(``/runs/sha256:<hex>``) hold no ``/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

__all__ = ["PREFIXES", "Routes", "ref_of"]

PREFIXES = ("/v1/runs/", "/runs/")
"""Where run references are: the JSON API's run resources and the run pages."""

_RESOURCE = re.compile(r"^(/v1/runs/|/runs/)\{ref:str\}(?:/([a-z]+))?$")


def ref_of(segment: str) -> str:
    """The reference a run route's ``{ref}`` segment holds (``Routes.routed`` escaped its ``%``
    and ``/``)."""
    return unquote(segment)


def _escaped(ref: str) -> str:
    return ref.replace("%", "%25").replace("/", "%2F")


class Routes:
    """The resources of a run by prefix and method (``manifest``, ``history``…), read from the
    app's route table (``paths``: each route's path and methods)."""

    def __init__(self, paths: Iterable[tuple[str, Iterable[str]]]) -> None:
        self.resources: dict[str, dict[str, frozenset[str]]] = {p: {} for p in PREFIXES}
        for path, methods in paths:
            found = _RESOURCE.match(path)
            if found is None or found[2] is None:
                continue
            by_method = self.resources[found[1]]
            for method in methods:
                by_method[method] = by_method.get(method, frozenset()) | {found[2]}
        # A read routes to a resource of any method (a GET of one only posted to is a 405).
        self._readable = {
            prefix: frozenset().union(*by.values()) for prefix, by in self.resources.items()
        }

    def routed(self, scope: Any) -> Any:
        """``scope`` with the path its route is found by (the same scope when that is its own
        path): under a run prefix, the reference as one segment (see the module's docstring)."""
        path = scope.get("path")
        if path is None or not path.startswith(PREFIXES):  # lifespan scopes have none
            return scope
        prefix = PREFIXES[0] if path.startswith(PREFIXES[0]) else PREFIXES[1]
        raw = scope.get("raw_path")
        if raw is not None and b"%" not in raw:
            # Nothing was encoded (the path is the one sent): a reference alone, or followed by
            # one resource name, is routed as it is (the common case, kept cheap).
            ref, slash, last = path[len(prefix) :].partition("/")
            if ref and (
                not slash
                or ("/" not in last and last in self.resources[prefix].get(scope.get("method"), ()))
            ):
                return scope
        sent = raw.partition(b"?")[0].decode("latin-1") if raw else ""
        if sent.startswith(prefix):
            # As sent: an encoded "/" stays inside its segment. Decoded as the server decodes.
            parts = [unquote(part) for part in sent[len(prefix) :].split("/")]
        else:  # no raw path (or another spelling of the prefix): the decoded one
            parts = path[len(prefix) :].split("/")
        parts = [part for part in parts if part]  # the router drops empty segments too
        if not parts:
            return scope
        tail = ""
        method = scope.get("method")
        names = (
            self._readable[prefix]
            if method in ("GET", "HEAD")
            else self.resources[prefix].get(method, ())
        )
        if len(parts) > 1 and parts[-1] in names:
            # A resource of this method; for a read, of any method (a GET of a resource only
            # posted to): routed as that resource, so the router answers 405 with ``Allow``
            # rather than reading its name as part of the reference. A post to a resource
            # that takes none stays a 404 naming the ones that do.
            tail = "/" + parts.pop()
        # A reference never starts with "/": one sent so (an encoded "/" first) is read without
        # it, as before.
        ref = "/".join(parts).lstrip("/")
        if not ref:
            return scope
        routed = prefix + _escaped(ref) + tail
        return scope if routed == path else {**scope, "path": routed}
