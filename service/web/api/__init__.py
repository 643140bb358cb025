"""The JSON API under ``/v1``, one module per resource: ``runs`` (dossiers, lists, compare),
``groups`` (leaderboards, leader history), ``log`` (checkpoint, key, entries, proofs) and
``operator`` (health, ingest). Handlers translate: they parse the request, call one use case of
``service.app`` and answer with its result, as a cached read (``service.web.caching``) where
they read."""

from __future__ import annotations

from service.web.api import groups, log, operator, runs

__all__ = ["API_HANDLERS"]

API_HANDLERS = [*operator.HANDLERS, *runs.HANDLERS, *groups.HANDLERS, *log.HANDLERS]
