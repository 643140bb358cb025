"""The JSON API under ``/v1``, one module per resource: ``runs`` (dossiers and their manifest,
history and citation, lists, compare), ``groups`` (leaderboards, leader history), ``log``
(checkpoint, key, entries, proofs), ``keys`` (challenges, registration, listing, revocation,
grants), ``attestations`` (posting one about a run, list, show, withdraw, hide, the predicate's
schema), ``reports`` (filing one about a run, resolution), ``reruns`` (asking for one, the
workers' routes), ``citations`` and ``operator`` (health, ingest); beside them, at the root,
``tiles`` (the C2SP tlog-tiles read API: ``/checkpoint``, ``/tile/…``).

Handlers translate: they parse the request, call one use case of ``service.app`` and answer
with its result; a read returns a ``Read`` (``service.web.caching``), which the app's one
responder answers (``service.web.responder``). Every resource of a run is a route of its own
(``/v1/runs/{ref}/…``): the reference is one path segment (``service.web.refs``)."""

from __future__ import annotations

from service.web.api import (
    attestations,
    citations,
    groups,
    keys,
    log,
    operator,
    reports,
    reruns,
    runs,
    tiles,
)

__all__ = ["API_HANDLERS"]

API_HANDLERS = [
    *operator.HANDLERS,
    *runs.HANDLERS,
    *groups.HANDLERS,
    *log.HANDLERS,
    *keys.HANDLERS,
    *attestations.HANDLERS,
    *reports.HANDLERS,
    *reruns.HANDLERS,
    *citations.HANDLERS,
    *tiles.HANDLERS,
]
